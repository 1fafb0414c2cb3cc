import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

/** The `slipway` command as `npm start` runs it (compiled dist/ when built, else the source). */
export const SLIPWAY_BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "bin", "slipway.mjs");

export interface StartResult {
  /** From spawning the process to the first 200 from /ok. */
  startMs: number;
  /** Resident memory of the server process once it has been idle for a few seconds. */
  idleRssMb: number;
  /**
   * Resident memory after `BENCH_REST_MS` (30 s) idle: V8 shrinks the heap it grew during
   * start-up only once allocation has been quiet for a while (its memory reducer, some 10–20 s).
   */
  restRssMb: number;
  /** Whether it ran the compiled build (false: the TypeScript source through tsx). */
  compiled: boolean;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return Math.round(kb / 1024);
}

const restMs = Number(process.env.BENCH_REST_MS ?? 30_000);

/**
 * Starts `slipway serve` as `npm start` does (logging on, reconciler on), times it to a healthy
 * /ok, reads its resident memory `idleMs` later and again `restMs` after /ok, and stops it.
 */
export async function startOnce(env: Record<string, string>, idleMs = 3000): Promise<StartResult> {
  const started = performance.now();
  const proc = spawn(process.execPath, [SLIPWAY_BIN, "serve"], {
    env: {
      ...process.env,
      PORT: "0",
      SLIPWAY_APPS_PORT: "0",
      SLIPWAY_BOOTSTRAP_API_KEY: `sw_bench_${randomBytes(16).toString("hex")}`,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  proc.stdout?.on("data", (c: Buffer) => {
    out += c.toString("utf8");
  });
  proc.stderr?.on("data", (c: Buffer) => {
    err += c.toString("utf8");
  });
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  try {
    let url: string | undefined;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`slipway serve exited with ${proc.exitCode}: ${err}`);
      url ??= /Slipway is serving (http:\/\/\S+) on/.exec(out)?.[1];
      if (url !== undefined) {
        const ok = await fetch(`${url}/ok`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) break;
      }
      // The server prints its URL once it listens; polled finely so the figure is the start-up's.
      await sleep(10);
    }
    const startMs = Math.round(performance.now() - started);
    await sleep(idleMs);
    if (proc.pid === undefined) throw new Error("no pid");
    const idleRssMb = rssMb(proc.pid);
    await sleep(Math.max(0, restMs - idleMs));
    return {
      startMs,
      idleRssMb,
      restRssMb: rssMb(proc.pid),
      compiled: !/running the TypeScript source|running the source/.test(err),
    };
  } finally {
    proc.kill("SIGTERM");
    await exited;
  }
}

export interface FootprintRow {
  db: string;
  first: StartResult;
  restart: StartResult;
}

/** First start on an empty database, then a restart on the same one. */
export async function footprint(db: string, env: Record<string, string>): Promise<FootprintRow> {
  const first = await startOnce(env);
  const restart = await startOnce(env);
  return { db, first, restart };
}

export function footprintTable(rows: FootprintRow[]): string {
  const lines = [
    `| database | first start to /ok ms | RSS 3 s after, MB | at rest (${restMs / 1000} s), MB | restart to /ok ms | RSS 3 s after, MB | at rest, MB | compiled |`,
    "|---|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.db} | ${r.first.startMs} | ${r.first.idleRssMb} | ${r.first.restRssMb} | ${r.restart.startMs} | ` +
        `${r.restart.idleRssMb} | ${r.restart.restRssMb} | ${r.first.compiled && r.restart.compiled ? "yes" : "no (tsx)"} |`,
    );
  }
  return lines.join("\n");
}
