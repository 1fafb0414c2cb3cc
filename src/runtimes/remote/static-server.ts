/**
 * The file server of a static site's image on a listener (the local runtime serves static sites
 * itself; a cluster needs a process in the pod). Plain JavaScript for the image's Node, no
 * dependencies: `node /slipway/static-server.mjs <root> <spa: 0|1>`, listening on $PORT.
 * GET and HEAD only; paths are decoded and must stay under the root; a directory answers its
 * index.html; a single-page app answers index.html for a missing path without an extension.
 */
export const STATIC_SERVER_FILE = "static-server.mjs";

export const STATIC_SERVER_SCRIPT = `import { createReadStream, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, resolve, sep } from "node:path";

const root = resolve(process.argv[2] ?? ".");
const spa = process.argv[3] === "1";
const TYPES = {
  ".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json", ".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8", ".wasm": "application/wasm", ".woff2": "font/woff2",
  ".woff": "font/woff", ".map": "application/json", ".xml": "application/xml",
};

function fileAt(path) {
  try {
    const s = statSync(path);
    if (s.isFile()) return { path, size: s.size };
    if (s.isDirectory()) return fileAt(join(path, "index.html"));
  } catch {}
  return undefined;
}

function find(urlPath) {
  let decoded;
  try { decoded = decodeURIComponent(urlPath); } catch { return { status: 400 }; }
  if (decoded.includes("\\0")) return { status: 400 };
  const path = resolve(root, "." + decoded);
  if (path !== root && !path.startsWith(root + sep)) return { status: 404 };
  const found = fileAt(path);
  if (found) return { status: 200, ...found };
  if (spa && extname(decoded) === "") {
    const index = fileAt(join(root, "index.html"));
    if (index) return { status: 200, ...index };
  }
  return { status: 404 };
}

createServer((req, res) => {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { allow: "GET, HEAD" }).end();
    return;
  }
  const found = find((req.url ?? "/").split("?")[0]);
  if (found.status !== 200) {
    res.writeHead(found.status, { "content-type": "text/plain; charset=utf-8" }).end(found.status === 404 ? "Not found\\n" : "Bad request\\n");
    return;
  }
  res.writeHead(200, {
    "content-type": TYPES[extname(found.path).toLowerCase()] ?? "application/octet-stream",
    "content-length": found.size,
  });
  if (req.method === "HEAD") res.end();
  else createReadStream(found.path).on("error", () => res.destroy()).pipe(res);
}).listen(Number(process.env.PORT ?? 8080));
`;
