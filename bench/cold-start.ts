import { request } from "node:http";
import { performance } from "node:perf_hooks";
import { patchToDeployed } from "./patch-to-deployed.ts";
import { createHello, median, type Serve, startServe } from "./serve.ts";

/**
 * Cold start: a `min_scale: 0` app of the built-in template, scaled to zero after 1 s idle, then
 * the time from sending a request to the first byte of its answer (the router holds it while one
 * process starts and passes its health check). On a real `slipway serve`.
 */
export async function coldStarts(
  runs: number,
  env: Record<string, string> = {},
): Promise<{ median: number; runs: number[] }> {
  const s = await startServe({ SLIPWAY_IDLE_SCALE_DOWN_S: "1", ...env });
  try {
    const id = await createHello(s, "bench-cold", { source_config: { resource_spec: { min_scale: 0 } } });
    // A revision-creating PATCH (a secret) and its wait to DEPLOYED, as deploy-time does.
    const first = await patchToDeployed({
      baseUrl: s.baseUrl,
      apiKey: s.apiKey,
      deploymentId: id,
      body: { secrets: [{ name: "BENCH_RUN", value: "cold" }] },
    });
    if (first.status !== "DEPLOYED") throw new Error(`deploy ended ${first.status}`);
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      await scaledToZero(s, id);
      times.push(Math.round(await firstByte(s.appsPort, "bench-cold.localhost")));
    }
    return { median: median(times), runs: times };
  } finally {
    await s.stop();
  }
}

async function scaledToZero(s: Serve, id: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(`${s.baseUrl}/v2/deployments/${id}/processes`, { headers: s.headers });
    const { resources } = (await res.json()) as { resources: { type: string }[] };
    if (!resources.some((p) => p.type === "api")) return;
    if (Date.now() > deadline) throw new Error("the app was never scaled to zero");
    await new Promise((r) => setTimeout(r, 100));
  }
}

function firstByte(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request({ host: "127.0.0.1", port, path: "/", headers: { host }, agent: false }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`the cold request answered ${res.statusCode}`));
      res.once("data", () => resolve(performance.now() - started));
      res.resume();
    });
    req.on("error", reject);
    req.end();
  });
}
