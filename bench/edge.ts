import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load } from "./load.ts";
import { patchToDeployed } from "./patch-to-deployed.ts";
import { createHello, median, startServe } from "./serve.ts";

/**
 * The apps edge beside nginx (issue 30's aim: at least 0.8× nginx's requests a second, p99 within
 * 1 ms of nginx's). The built-in hello-http app four ways, on loopback: directly (a copy the bench
 * starts), behind nginx (1 worker, upstream keep-alive, a config the bench writes) in front of that
 * copy, and behind Slipway's apps edge in front of its own deployed copy (a real `slipway serve`,
 * SLIPWAY_SANDBOX=none so the app is on loopback as nginx's is): with its HAProxy front (one thread,
 * as nginx has one worker), and with the Node edge alone (SLIPWAY_EDGE=node). Where this machine can
 * (root, bubblewrap, nftables), a fifth row: the HAProxy front with the app in its own sandbox and
 * network namespace (SLIPWAY_SANDBOX=bwrap, issue 26's "report both"). Rounds interleave.
 */

const NGINX = "/usr/sbin/nginx";
const TEMPLATE = join(import.meta.dirname, "..", "templates", "hello-http", "server.js");

export interface EdgeRow {
  path: string;
  rps: number;
  p99: number;
  runs: number[];
  /** Failed requests (socket errors, timeouts) and non-2xx answers over every round. */
  failed: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a !== null ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** GET url's status (node:http: fetch may not set Host). */
function status(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { headers, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
    req.end();
  });
}

async function untilAnswers(url: string, headers: Record<string, string> = {}): Promise<void> {
  const deadline = Date.now() + 20_000;
  while ((await status(url, headers)) !== 200) {
    if (Date.now() > deadline) throw new Error(`${url} never answered 200`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function nginxConfig(dir: string, port: number, upstream: number): string {
  const temp = (name: string) => `${name}_temp_path ${join(dir, name)};`;
  return `worker_processes 1;
daemon off;
pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "error.log")} warn;
events { worker_connections 1024; }
http {
  access_log off;
  ${temp("client_body")} ${temp("proxy")} ${temp("fastcgi")} ${temp("uwsgi")} ${temp("scgi")}
  upstream app { server 127.0.0.1:${upstream}; keepalive 32; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }
  }
}
`;
}

/** The three rows, or why they could not be measured. */
export async function edgeVsNginx(seconds: number, rounds: number): Promise<EdgeRow[] | string> {
  if (!existsSync(NGINX)) return "nginx is not installed (apt-get install nginx-light)";
  const dir = mkdtempSync(join(tmpdir(), "slipway-bench-edge-"));
  const children: ChildProcess[] = [];
  const fronted = await startServe({
    SLIPWAY_SANDBOX: "none",
    SLIPWAY_EDGE: "haproxy",
    SLIPWAY_EDGE_THREADS: "1",
  });
  const nodeOnly = await startServe({ SLIPWAY_SANDBOX: "none", SLIPWAY_EDGE: "node" });
  const sandboxed = process.getuid?.() === 0 && existsSync("/usr/bin/bwrap") && existsSync("/usr/sbin/nft");
  const isolated = sandboxed
    ? await startServe({ SLIPWAY_SANDBOX: "bwrap", SLIPWAY_EDGE: "haproxy", SLIPWAY_EDGE_THREADS: "1" })
    : undefined;
  try {
    const appPort = await freePort();
    children.push(
      spawn(process.execPath, [TEMPLATE], {
        env: { PORT: String(appPort), PATH: process.env.PATH },
        stdio: "ignore",
      }),
    );
    const nginxPort = await freePort();
    mkdirSync(join(dir, "logs"));
    writeFileSync(join(dir, "nginx.conf"), nginxConfig(dir, nginxPort, appPort));
    children.push(spawn(NGINX, ["-p", dir, "-c", join(dir, "nginx.conf")], { stdio: "ignore" }));
    for (const s of [fronted, nodeOnly, ...(isolated === undefined ? [] : [isolated])]) {
      const id = await createHello(s, "bench-edge");
      const deployed = await patchToDeployed({
        baseUrl: s.baseUrl,
        apiKey: s.apiKey,
        deploymentId: id,
        body: { secrets: [{ name: "BENCH_RUN", value: "edge" }] },
      });
      if (deployed.status !== "DEPLOYED") throw new Error(`the edge's app ended ${deployed.status}`);
    }
    const host = { host: "bench-edge.localhost" };
    const targets = [
      { path: "the app directly", url: `http://127.0.0.1:${appPort}`, headers: {} },
      { path: "nginx in front of it", url: `http://127.0.0.1:${nginxPort}`, headers: {} },
      {
        path: "Slipway's apps edge (HAProxy front) in front of its deployed copy",
        url: `http://127.0.0.1:${fronted.appsPort}`,
        headers: host,
      },
      {
        path: "Slipway's Node edge alone (SLIPWAY_EDGE=node)",
        url: `http://127.0.0.1:${nodeOnly.appsPort}`,
        headers: host,
      },
      ...(isolated === undefined
        ? []
        : [
            {
              path: "Slipway's apps edge (HAProxy front), the app in its sandbox and network namespace",
              url: `http://127.0.0.1:${isolated.appsPort}`,
              headers: host,
            },
          ]),
    ];
    for (const t of targets) await untilAnswers(`${t.url}/`, t.headers);
    const runs = new Map<string, { rps: number; p99: number; failed: number }[]>(
      targets.map((t) => [t.path, []]),
    );
    // A warm-up of each, then the measured rounds, the order turned every round.
    for (const t of targets)
      await load({ url: t.url, headers: t.headers, paths: ["/"], seconds: 1, connections: 10 });
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        const got = await load({ url: t.url, headers: t.headers, paths: ["/"], seconds, connections: 10 });
        runs.get(t.path)?.push({ rps: got.rps, p99: got.p99, failed: got.errors + got.non2xx });
      }
    }
    return targets.map((t) => {
      const mine = runs.get(t.path) ?? [];
      return {
        path: t.path,
        rps: median(mine.map((m) => m.rps)),
        p99: median(mine.map((m) => m.p99)),
        runs: mine.map((m) => Math.round(m.rps)),
        failed: mine.reduce((sum, m) => sum + m.failed, 0),
      };
    });
  } finally {
    for (const c of children) c.kill("SIGTERM");
    await fronted.stop();
    await nodeOnly.stop();
    await isolated?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function edgeLines(rows: EdgeRow[] | string): string {
  const what = "Apps edge beside nginx (hello-http, 10 connections, medians of interleaved rounds)";
  if (typeof rows === "string") return `${what}: not measured: ${rows}`;
  const [direct, nginx, edge, nodeEdge, isolatedEdge] = rows;
  if (direct === undefined || nginx === undefined || edge === undefined) return `${what}: no result`;
  const lines = rows.map(
    (r) =>
      `  ${r.path}: ${Math.round(r.rps)} req/s (${(r.rps / direct.rps).toFixed(2)}× direct), p99 ${r.p99} ms (runs: ${r.runs.join(", ")} req/s)${r.failed > 0 ? `, ${r.failed} failed` : ""}`,
  );
  const ratio = edge.rps / nginx.rps;
  const p99 = edge.p99 - nginx.p99;
  // Slipway's own edge must fail no request; the references' failures are reported beside them.
  const meets = ratio >= 0.8 && p99 <= 1 && edge.failed === 0 ? "meets" : "misses";
  const node =
    nodeEdge === undefined ? "" : `; the Node edge alone ${(nodeEdge.rps / nginx.rps).toFixed(2)}× nginx`;
  const isolated =
    isolatedEdge === undefined
      ? "; namespaces on: not measured (needs root, bubblewrap and nftables)"
      : `; with the app in its network namespace ${(isolatedEdge.rps / nginx.rps).toFixed(2)}× nginx, p99 ${isolatedEdge.p99 - nginx.p99 >= 0 ? "+" : ""}${isolatedEdge.p99 - nginx.p99} ms`;
  return `${what}:\n${lines.join("\n")}\n  edge/nginx ${ratio.toFixed(2)}×, p99 ${p99 >= 0 ? "+" : ""}${p99} ms: ${meets} the aims (≥ 0.8× nginx, p99 within 1 ms)${node}${isolated}`;
}
