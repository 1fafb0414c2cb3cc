// `node --import tsx bench/listener.ts [N]`: the listener at scale against the stand-in API server
// (with its pod controller): N deployments (default 1,000) rolled out, then the listener's requests
// to the API server while idle (aim: at most 1 a second) and for one changed deployment (aim: at
// most 5). The control plane is played by a small HTTP server serving the desired state and taking
// status reports (pods reports too), so only the listener's own traffic to the cluster is counted;
// its status reports to the control plane are counted apart (pods are sent only when they change).

import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Listener } from "../src/listener/listener.ts";
import type {
  DeploymentPodsReport,
  DesiredDeployment,
  DesiredState,
  RevisionReport,
} from "../src/protocol/listener.ts";
import { startK8sStandIn } from "../test/helpers/k8s-standin/server.ts";

const N = Number(process.argv[2] ?? 1000);
const IDLE_S = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
const NS = "apps";
const LISTENER_ID = "0b6c3f0e-5d1a-4c53-9f0e-2a4c1d7e9b10";
const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
const uuid = (kind: number, i: number, v = 0) =>
  `${hex(kind, 8)}-${hex(v, 4)}-4${hex(i >> 12, 3)}-8${hex(i & 0xfff, 3)}-${hex(i, 12)}`;

function deployment(i: number, version = 0): DesiredDeployment {
  return {
    deployment_id: uuid(0xd0, i),
    name: `app-${i}`,
    namespace: NS,
    revision_id: uuid(0xae, i, version),
    image: `registry.example.com/app-${i}:${version}`,
    env: { PORT: "8080" },
    secret_references: [],
    resource_spec: { cpu: 0.1 },
    health_path: "/",
    port: 8080,
    host: `app-${i}.apps.example.com`,
    deployment_type: "dev",
    registry_credentials: null,
  };
}

const state: DesiredState = {
  version: 1,
  listener_id: LISTENER_ID,
  namespaces: [NS],
  deployments: [],
  pod_reports: true,
};
for (let i = 0; i < N; i++) state.deployments.push(deployment(i));
const reported = new Map<string, string>();
/** Status reports received, and the pods reports in them. */
const reports = { requests: 0, pods: 0 };
const waiting = new Set<() => void>();

const cp = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://cp");
  if (url.pathname.endsWith("/desired")) {
    const after = Number(url.searchParams.get("after") ?? 0);
    const wait = Number(url.searchParams.get("wait") ?? 0);
    const answer = () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(state));
    };
    if (after !== state.version || wait === 0) return answer();
    const wake = () => {
      clearTimeout(t);
      waiting.delete(wake);
      answer();
    };
    const t = setTimeout(wake, wait * 1000);
    waiting.add(wake);
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const body = JSON.parse(Buffer.concat(chunks).toString() || "{}") as {
      revisions?: RevisionReport[];
      deployments?: DeploymentPodsReport[];
    };
    for (const r of body.revisions ?? []) reported.set(r.revision_id, r.state);
    reports.requests++;
    reports.pods += body.deployments?.length ?? 0;
    res.writeHead(204).end();
  });
});
await new Promise<void>((r) => cp.listen(0, "127.0.0.1", r));
const cpUrl = `http://127.0.0.1:${(cp.address() as AddressInfo).port}`;

const k8s = await startK8sStandIn({ namespaces: [NS], controller: true });
k8s.controller?.start(1000);
const dir = mkdtempSync(join(tmpdir(), "slipway-bench-listener-"));
const listener = new Listener({
  controlPlane: { url: cpUrl, apiKey: "bench", listenerId: LISTENER_ID },
  kubeconfig: k8s.kubeconfig(dir, NS),
  manifests: {
    routing: { kind: "ingress", className: "nginx" },
    postgresImage: "postgres:16",
    redisImage: "redis:7",
  },
  namespaces: [],
  waitSeconds: 30,
  resyncMs: 10_000,
  heartbeatMs: 30_000,
  log: () => {},
});
void listener.run();

const until = async (what: string, done: () => boolean, limitS = 1800) => {
  const start = Date.now();
  while (!done()) {
    if (Date.now() - start > limitS * 1000) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  return (Date.now() - start) / 1000;
};
const available = (d: DesiredDeployment) => reported.get(d.revision_id) === "available";

const t0 = Date.now();
const progress = setInterval(() => {
  const n = state.deployments.filter(available).length;
  console.log(
    `  ${((Date.now() - t0) / 1000).toFixed(0)} s: ${n} of ${N} available, ${k8s.requests.length} requests`,
  );
}, 15_000);
const rollout = await until(`${N} deployments available`, () => state.deployments.every(available));
clearInterval(progress);
const startRequests = k8s.requests.length;
console.log(`${N} deployments applied and available in ${rollout.toFixed(1)} s (${startRequests} requests)`);

await new Promise((r) => setTimeout(r, 5000));
const idleFrom = k8s.requests.length;
const idleReports = { ...reports };
await new Promise((r) => setTimeout(r, IDLE_S * 1000));
const idle = k8s.requests.slice(idleFrom);
const idleRate = idle.length / IDLE_S;
console.log(`idle: ${idle.length} requests in ${IDLE_S} s = ${idleRate.toFixed(2)}/s (aim ≤ 1/s)`);
console.log(
  `idle: ${reports.requests - idleReports.requests} status reports to the control plane (heartbeats), ${reports.pods - idleReports.pods} pods reports`,
);

const changedFrom = k8s.requests.length;
const changedReports = { ...reports };
state.deployments[0] = deployment(0, 1);
state.version++;
for (const wake of [...waiting]) wake();
await until("the changed deployment available", () => available(state.deployments[0] as DesiredDeployment));
await new Promise((r) => setTimeout(r, 2000));
const changed = k8s.requests.slice(changedFrom);
console.log(`one changed deployment: ${changed.length} requests (aim ≤ 5)`);
console.log(
  `one changed deployment: ${reports.requests - changedReports.requests} status reports, ${reports.pods - changedReports.pods} pods reports`,
);
for (const line of changed) console.log(`  ${line.slice(0, 160)}`);
console.log(`total ${((Date.now() - t0) / 1000).toFixed(0)} s`);

listener.stop();
await k8s.close();
cp.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
