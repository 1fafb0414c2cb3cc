import { request } from "node:http";
import { patchToDeployed } from "./patch-to-deployed.ts";
import { createHello, type Serve, startServe } from "./serve.ts";

/**
 * `npm run bench -- --soak`: a real `slipway serve` (embedded database, reconciler, local runtime)
 * under deploys, API traffic and app traffic for SOAK_MINUTES (default 20). Its resident memory,
 * open file descriptors, heap and event-loop delay (from its /metrics) are read after a minute of
 * warm-up and at the end. Aims: growth under 10%, and no descriptor leak.
 */
interface Sample {
  rssMb: number;
  heapMb: number;
  fds: number;
  loopP99Ms: number;
  loopMeanMs: number;
}

async function sample(s: Serve): Promise<Sample> {
  const text = await (await fetch(`${s.baseUrl}/metrics`)).text();
  const metric = (name: string): number => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, "m").exec(text);
    if (!m) throw new Error(`no ${name} in /metrics`);
    return Number(m[1]);
  };
  return {
    rssMb: metric("slipway_process_resident_memory_bytes") / 1e6,
    heapMb: metric("slipway_nodejs_heap_size_used_bytes") / 1e6,
    fds: metric("slipway_process_open_fds"),
    loopP99Ms: metric("slipway_nodejs_eventloop_lag_p99_seconds") * 1000,
    loopMeanMs: metric("slipway_nodejs_eventloop_lag_mean_seconds") * 1000,
  };
}

function appHit(port: number, host: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: "/", headers: { host } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", () => resolve(0));
    req.end();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function soakBench(minutes = Number(process.env.SOAK_MINUTES ?? 20)): Promise<void> {
  const s = await startServe();
  try {
    const id = await createHello(s, "soak-app");
    const first = await patchToDeployed({
      baseUrl: s.baseUrl,
      apiKey: s.apiKey,
      deploymentId: id,
      body: { secrets: [{ name: "RUN", value: "0" }] },
    });
    if (first.status !== "DEPLOYED") throw new Error(`the first deploy ended ${first.status}`);
    const counts = { api: 0, apiErrors: 0, app: 0, appErrors: 0, deploys: 0, deployFailures: 0 };
    let stop = false;
    const api = async () => {
      while (!stop) {
        const res = await fetch(`${s.baseUrl}/v2/deployments/${id}`, { headers: s.headers });
        await res.arrayBuffer();
        counts.api++;
        if (res.status !== 200) counts.apiErrors++;
        const list = await fetch(`${s.baseUrl}/v2/deployments?limit=20`, { headers: s.headers });
        await list.arrayBuffer();
        if (list.status !== 200) counts.apiErrors++;
        await sleep(20);
      }
    };
    const app = async () => {
      while (!stop) {
        const status = await appHit(s.appsPort, "soak-app.localhost");
        counts.app++;
        if (status !== 200) counts.appErrors++;
        await sleep(10);
      }
    };
    const deploys = async () => {
      while (!stop) {
        await sleep(30_000);
        if (stop) break;
        const r = await patchToDeployed({
          baseUrl: s.baseUrl,
          apiKey: s.apiKey,
          deploymentId: id,
          body: { secrets: [{ name: "RUN", value: String(counts.deploys + 1) }] },
        });
        counts.deploys++;
        if (r.status !== "DEPLOYED") counts.deployFailures++;
      }
    };
    const load = [api(), api(), app(), app(), deploys()];
    await sleep(60_000);
    const start = await sample(s);
    await sleep(Math.max(0, minutes * 60_000 - 60_000));
    const end = await sample(s);
    stop = true;
    await Promise.all(load);
    const pct = (a: number, b: number) => `${(((b - a) / a) * 100).toFixed(1)}%`;
    console.log(
      `\nSoak: ${minutes} min, ${counts.deploys} deploys (${counts.deployFailures} failed), ${counts.api} API reads (${counts.apiErrors} not 200), ${counts.app} app requests (${counts.appErrors} not 200)`,
    );
    console.log("| | after 1 min | at the end | growth |");
    console.log("|---|---|---|---|");
    console.log(
      `| RSS | ${start.rssMb.toFixed(1)} MB | ${end.rssMb.toFixed(1)} MB | ${pct(start.rssMb, end.rssMb)} |`,
    );
    console.log(
      `| heap used | ${start.heapMb.toFixed(1)} MB | ${end.heapMb.toFixed(1)} MB | ${pct(start.heapMb, end.heapMb)} |`,
    );
    console.log(`| open fds | ${start.fds} | ${end.fds} | ${end.fds - start.fds} |`);
    console.log(
      `| event-loop delay p99 | ${start.loopP99Ms.toFixed(1)} ms | ${end.loopP99Ms.toFixed(1)} ms | ${pct(start.loopP99Ms, end.loopP99Ms)} |`,
    );
    console.log(
      `| event-loop delay mean | ${start.loopMeanMs.toFixed(1)} ms | ${end.loopMeanMs.toFixed(1)} ms | ${pct(start.loopMeanMs, end.loopMeanMs)} |`,
    );
  } finally {
    await s.stop();
  }
}
