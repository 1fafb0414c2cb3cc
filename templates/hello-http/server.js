// A minimal HTTP app for Slipway: no dependencies, listens on $PORT, answers with JSON.
import { createServer } from "node:http";

const port = Number(process.env.PORT || 3000);
const greeting = process.env.GREETING || "Hello from Slipway";

const server = createServer((req, res) => {
  const url = new URL(req.url || "/", "http://localhost");
  const body = JSON.stringify({ message: greeting, path: url.pathname, template: "hello-http" });
  res.writeHead(url.pathname === "/" ? 200 : 404, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
});

server.listen(port, () => {
  console.log(`hello-http listening on port ${port}`);
});

// Stop accepting connections on SIGTERM so a redeploy drains cleanly.
process.on("SIGTERM", () => server.close(() => process.exit(0)));
