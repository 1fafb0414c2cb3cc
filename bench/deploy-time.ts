import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SLIPWAY_BIN } from "./footprint.ts";
import { patchToDeployed } from "./patch-to-deployed.ts";

/**
 * Time from a revision-creating PATCH to DEPLOYED for the built-in minimal app, on a real
 * `slipway serve` as `npm start` runs it (embedded database, reconciler and local runtime),
 * measured over HTTP.
 */
export async function deployTimes(
  runs: number,
  env: Record<string, string> = {},
): Promise<{ median: number; runs: number[] }> {
  const dataDir = mkdtempSync(join(tmpdir(), "slipway-bench-deploy-"));
  const apiKey = `sw_bench_${randomBytes(16).toString("hex")}`;
  const proc = spawn(process.execPath, [SLIPWAY_BIN, "serve"], {
    env: {
      ...process.env,
      DATABASE_URL: "memory://",
      PORT: "0",
      SLIPWAY_APPS_PORT: "0",
      SLIPWAY_DATA_DIR: dataDir,
      SLIPWAY_BOOTSTRAP_API_KEY: apiKey,
      SLIPWAY_RECONCILER_POLL_MS: "500",
      SLIPWAY_RATE_LIMIT_PER_MINUTE: "0",
      LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const baseUrl = await new Promise<string>((resolve, reject) => {
      let out = "";
      proc.stdout?.on("data", (c: Buffer) => {
        out += c.toString("utf8");
        const m = /Slipway is serving (http:\/\/\S+) on/.exec(out);
        if (m) resolve(m[1] as string);
      });
      proc.once("exit", (code) => reject(new Error(`slipway serve exited with ${code}`)));
    });
    const headers = { "x-api-key": apiKey, "content-type": "application/json" };
    const created = await fetch(`${baseUrl}/v2/deployments`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        name: "bench-app",
        source: "internal_template",
        source_revision_config: { repo_ref: "hello-http", framework_config_path: "slipway.json" },
      }),
    });
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${await created.text()}`);
    const deploymentId = ((await created.json()) as { id: string }).id;
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
    const sorted = [...times].sort((a, b) => a - b);
    return { median: sorted[Math.floor(sorted.length / 2)] as number, runs: times };
  } finally {
    proc.kill("SIGTERM");
    await new Promise((r) => proc.once("exit", r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}
