import { patchToDeployed } from "./patch-to-deployed.ts";
import { createHello, median, startServe } from "./serve.ts";

/**
 * Time from a revision-creating PATCH to DEPLOYED for the built-in minimal app, on a real
 * `slipway serve` as `npm start` runs it (embedded database, reconciler and local runtime),
 * measured over HTTP.
 */
export async function deployTimes(
  runs: number,
  env: Record<string, string> = {},
): Promise<{ median: number; runs: number[] }> {
  const s = await startServe(env);
  const { baseUrl, apiKey } = s;
  try {
    const deploymentId = await createHello(s, "bench-app");
    // The first deploy includes provisioning; measured runs are the PATCHes after it.
    const first = await patchToDeployed({
      baseUrl,
      apiKey,
      deploymentId,
      body: { secrets: [{ name: "BENCH_RUN", value: "warm-up" }] },
    });
    if (first.status !== "DEPLOYED") throw new Error(`warm-up deploy ended ${first.status}`);
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const r = await patchToDeployed({
        baseUrl,
        apiKey,
        deploymentId,
        body: { secrets: [{ name: "BENCH_RUN", value: String(i) }] },
        pollMs: 20,
      });
      if (r.status !== "DEPLOYED") throw new Error(`run ${i} ended ${r.status}`);
      times.push(Math.round(r.ms));
    }
    return { median: median(times), runs: times };
  } finally {
    await s.stop();
  }
}
