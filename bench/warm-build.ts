import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { performance } from "node:perf_hooks";
import type { PhaseContext, RevisionSpec } from "../src/runtimes/interface.ts";
import { LocalRuntime, type LocalRuntimeOptions } from "../src/runtimes/local/runtime.ts";
import { hostSystem, probeBwrap } from "../src/runtimes/local/sandbox/sandbox.ts";
import { makeWheel } from "../test/helpers/python-index.ts";

/**
 * Cold and warm builds (the runtime's build phase: BUILDING → AWAITING_DEPLOY) of one deployment:
 * a Node app with 101 npm packages (bench/fixtures/warm-node: express, yargs, axios, chalk, dotenv
 * and their lockfile, installed from the npm registry) and a Python app with 5 wheels. The warm
 * builds change the code and keep the lockfile, so they reuse the deployment's dependency cache.
 */

const FIXTURE = join(import.meta.dirname, "fixtures", "warm-node");
const NODE_SERVER = (v: string) =>
  `require("express")().get("/", (_q, r) => r.send("${v}")).listen(Number(process.env.PORT), "127.0.0.1");\n`;
const PY_APP = (v: string) =>
  `import os, http.server\nprint("${v}")\nhttp.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), http.server.SimpleHTTPRequestHandler).serve_forever()\n`;

export interface WarmResult {
  app: string;
  sandbox: string;
  coldMs: number;
  warmMs: number[];
}

function quietPhase(lines: string[]): PhaseContext {
  return { signal: new AbortController().signal, log: (_s, line) => lines.push(line) };
}

/** A local runtime for a build bench: quiet, on a free apps port. */
export function benchRuntime(
  dataDir: string,
  extra: Partial<LocalRuntimeOptions> & Pick<LocalRuntimeOptions, "sandbox">,
): LocalRuntime {
  return new LocalRuntime({
    dataDir,
    appsPort: 0,
    appsDomain: "apps.bench",
    appsHost: "127.0.0.1",
    healthTimeoutMs: 10_000,
    logger: { info: () => {}, warn: () => {} },
    ...extra,
  });
}

/** Prepares the revision, then times its build phase (BUILDING → AWAITING_DEPLOY); the log's lines too. */
export async function timedBuild(
  rt: LocalRuntime,
  spec: RevisionSpec,
  what: string,
): Promise<{ ms: number; lines: string[] }> {
  const lines: string[] = [];
  await rt.prepare(spec, quietPhase(lines));
  const started = performance.now();
  try {
    await rt.build(spec, quietPhase(lines));
  } catch (err) {
    throw new Error(`${what} failed: ${(err as Error).message}\n${lines.join("\n")}`);
  }
  return { ms: Math.round(performance.now() - started), lines };
}

async function coldAndWarm(
  app: string,
  sandbox: "bwrap" | "none",
  writeSource: (dir: string, version: string) => void,
  warmRuns: number,
): Promise<WarmResult> {
  const dataDir = mkdtempSync(join(tmpdir(), "slipway-bench-warm-"));
  const sources = mkdtempSync(join(tmpdir(), "slipway-bench-warm-src-"));
  const rt = benchRuntime(dataDir, {
    sandbox,
    packageIndexes: { npm: "https://registry.npmjs.org/", pipExtra: [] },
  });
  const time = async (n: number): Promise<number> => {
    const dir = join(sources, `v${n}`);
    writeSource(dir, `v${n}`);
    const spec: RevisionSpec = {
      deploymentId: "bench-warm",
      deploymentName: "bench-warm",
      revisionId: `rev-${n}`,
      source: { kind: "directory", path: dir },
      resourceSpec: null,
      env: {},
      trusted: true,
    };
    const { ms, lines } = await timedBuild(rt, spec, `${app} build ${n}`);
    if (n > 0 && !lines.some((l) => l.startsWith("slipway: reused "))) {
      throw new Error(`${app} warm build ${n} did not reuse its dependencies:\n${lines.join("\n")}`);
    }
    return ms;
  };
  try {
    const coldMs = await time(0);
    const warmMs: number[] = [];
    for (let i = 1; i <= warmRuns; i++) warmMs.push(await time(i));
    return { app, sandbox, coldMs, warmMs };
  } finally {
    await rt.teardown("bench-warm").catch(() => {});
    await rt.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(sources, { recursive: true, force: true });
  }
}

function nodeSource(dir: string, version: string): void {
  cpSync(FIXTURE, dir, { recursive: true });
  writeFileSync(join(dir, "server.js"), NODE_SERVER(version));
}

/** Five pure-Python wheels shipped in the source (the sandbox's network reaches no loopback index). */
function pythonSource(wheelsDir: string): (dir: string, version: string) => void {
  const wheels = ["alpha", "bravo", "charlie", "delta", "echo"].map((name) =>
    makeWheel(wheelsDir, `bench-${name}`, "1.0", { [`bench_${name}/__init__.py`]: `NAME = "${name}"\n` }),
  );
  return (dir, version) => {
    mkdirSync(join(dir, "wheels"), { recursive: true });
    for (const w of wheels) copyFileSync(w, join(dir, "wheels", basename(w)));
    writeFileSync(join(dir, "requirements.txt"), wheels.map((w) => `./wheels/${basename(w)}`).join("\n"));
    writeFileSync(join(dir, "main.py"), PY_APP(version));
  };
}

export async function warmBuilds(warmRuns: number): Promise<WarmResult[]> {
  const sandbox = (await probeBwrap(hostSystem())) === undefined ? "bwrap" : "none";
  const wheelsDir = mkdtempSync(join(tmpdir(), "slipway-bench-wheels-"));
  try {
    return [
      await coldAndWarm("node, 101 npm packages (npm ci)", sandbox, nodeSource, warmRuns),
      // Without a sandbox a venv is never reused (its scripts name the revision's host path).
      ...(sandbox === "bwrap"
        ? [await coldAndWarm("python, 5 wheels (pip)", sandbox, pythonSource(wheelsDir), warmRuns)]
        : []),
    ];
  } finally {
    rmSync(wheelsDir, { recursive: true, force: true });
  }
}

export function warmLine(r: WarmResult): string {
  const warm = [...r.warmMs].sort((a, b) => a - b)[Math.floor(r.warmMs.length / 2)] ?? 0;
  const ratio = warm / r.coldMs;
  const ok = warm <= 1500 && ratio < 1 / 3 ? "meets" : "misses";
  return (
    `Build (BUILDING → AWAITING_DEPLOY), ${r.app}, SLIPWAY_SANDBOX=${r.sandbox}: cold ${r.coldMs} ms, ` +
    `warm median ${warm} ms (runs: ${r.warmMs.join(", ")} ms), warm/cold ${ratio.toFixed(2)}: ` +
    `${ok} the aims (warm ≤ 1500 ms and under a third of cold)`
  );
}
