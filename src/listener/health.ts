// The listener's liveness and readiness answers on a small port of its own (the kubelet's
// probes): /healthz while its loop goes round, /readyz while it hears from the control plane.
import { createServer, type Server } from "node:http";

export interface Health {
  live(): boolean;
  ready(): { ok: boolean; detail: string };
}

export async function startHealthServer(port: number, health: Health): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/healthz") {
      const ok = health.live();
      res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" });
      return res.end(ok ? "ok\n" : "the listener's loop has stopped\n");
    }
    if (path === "/readyz") {
      const { ok, detail } = health.ready();
      res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" });
      return res.end(`${detail}\n`);
    }
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, resolve);
  });
  return server;
}
