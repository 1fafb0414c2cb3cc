import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SLIPWAY_BIN } from "./footprint.ts";

export interface Serve {
  baseUrl: string;
  /** The apps listener's port (where `<name>.localhost` apps answer). */
  appsPort: number;
  apiKey: string;
  headers: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * A real `slipway serve` as `npm start` runs it (bin/slipway.mjs: compiled when dist/ is current),
 * with an embedded in-memory database, reconciler and local runtime, for a bench.
 */
export async function startServe(env: Record<string, string> = {}): Promise<Serve> {
  const dataDir = mkdtempSync(join(tmpdir(), "slipway-bench-serve-"));
  const apiKey = `sw_bench_${randomBytes(16).toString("hex")}`;
  const proc = spawn(
    process.execPath,
    [...(process.env.BENCH_SERVE_NODE_ARGS ?? "").split(" ").filter(Boolean), SLIPWAY_BIN, "serve"],
    {
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
    },
  );
  const stop = async () => {
    proc.kill("SIGTERM");
    await new Promise((r) => proc.once("exit", r));
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const [baseUrl, appsPort] = await new Promise<[string, number]>((resolve, reject) => {
      let out = "";
      proc.stdout?.on("data", (c: Buffer) => {
        out += c.toString("utf8");
        const serving = /Slipway is serving (http:\/\/\S+) on/.exec(out);
        const apps = /Apps: +http:\/\/\S+:(\d+)/.exec(out);
        if (serving && apps) resolve([serving[1] as string, Number(apps[1])]);
      });
      proc.once("exit", (code) => reject(new Error(`slipway serve exited with ${code}`)));
    });
    return {
      baseUrl,
      appsPort,
      apiKey,
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Creates a deployment of the built-in `hello-http` template; resolves to its id. */
export async function createHello(
  s: Serve,
  name: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const created = await fetch(`${s.baseUrl}/v2/deployments`, {
    method: "POST",
    headers: s.headers,
    body: JSON.stringify({
      name,
      source: "internal_template",
      source_revision_config: { repo_ref: "hello-http", framework_config_path: "slipway.json" },
      ...extra,
    }),
  });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${await created.text()}`);
  return ((await created.json()) as { id: string }).id;
}

export const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
