import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { LogStream } from "../../src/core/revision-logs/store.ts";
import type { PhaseContext, RevisionSpec, SourceLocation } from "../../src/runtimes/interface.ts";
import { LocalRuntime, type LocalRuntimeOptions } from "../../src/runtimes/local/runtime.ts";

export const DOMAIN = "apps.test";

const made: string[] = [];

/** A temp dir removed when `cleanupTemp` runs (after each file). */
export function tempDir(prefix = "slipway-rt-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export function cleanupTemp(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export const quietLogger = { info: () => {}, warn: () => {} };

/**
 * The arguments of a host script (a stand-in Slipway process that a test kills):
 * `<dataDir> <specJson> [more…]`.
 */
export function hostArgs(script: string): { dataDir: string; spec: RevisionSpec; more: string[] } {
  const [dataDir, specJson, ...more] = process.argv.slice(2);
  if (dataDir === undefined || specJson === undefined)
    throw new Error(`usage: ${script} <dataDir> <specJson>`);
  return { dataDir, spec: JSON.parse(specJson) as RevisionSpec, more };
}

export function newRuntime(dataDir: string, opts: Partial<LocalRuntimeOptions> = {}): LocalRuntime {
  return new LocalRuntime({
    dataDir,
    appsPort: 0,
    appsDomain: DOMAIN,
    appsHost: "127.0.0.1",
    healthTimeoutMs: 10_000,
    logger: quietLogger,
    stopGraceMs: 1000,
    drainTimeoutMs: 10_000,
    restartBackoffMs: 100,
    // These suites look at host paths and pids from inside the app; sandbox.test.ts runs bwrap.
    sandbox: "none",
    ...opts,
  });
}

/** A PhaseContext that keeps every line, with its own abort controller. */
export function phase(): PhaseContext & {
  lines: Record<LogStream, string[]>;
  abort: AbortController;
  text(s: LogStream): string;
} {
  const abort = new AbortController();
  const lines: Record<LogStream, string[]> = { build: [], deploy: [] };
  return {
    lines,
    abort,
    signal: abort.signal,
    log: (stream, line) => {
      lines[stream].push(line);
    },
    text: (stream) => lines[stream].join("\n"),
  };
}

/** Prepares and builds `s` (a fresh phase); resolves to the phase, with its log lines. */
export async function built(rt: LocalRuntime, s: RevisionSpec): Promise<ReturnType<typeof phase>> {
  const ctx = phase();
  await rt.prepare(s, ctx);
  await rt.build(s, ctx);
  return ctx;
}

/** Prepares, builds and activates `s`: its processes serve once this settles. */
export async function deployed(rt: LocalRuntime, s: RevisionSpec): Promise<ReturnType<typeof phase>> {
  const ctx = await built(rt, s);
  await rt.activate(s, ctx);
  return ctx;
}

let counter = 0;

export function spec(source: SourceLocation, extra: Partial<RevisionSpec> = {}): RevisionSpec {
  counter++;
  return {
    deploymentId: `dep-${process.pid}-${counter}`,
    deploymentName: `app${counter}`,
    revisionId: `rev-${counter}-a`,
    source,
    frameworkConfigPath: "app.json",
    resourceSpec: null,
    env: {},
    trusted: true,
    ...extra,
  };
}

/**
 * A tiny HTTP app without dependencies. GET / answers JSON with its pid and env values;
 * /crash answers and then exits with code 3; /slow?ms=N answers after N (default 200) ms.
 */
export const SERVER_JS = `
const http = require("node:http");
const fs = require("node:fs");
const VERSION = "__VERSION__";
const server = http.createServer((req, res) => {
  if (req.url === "/crash") {
    res.end("bye");
    console.error("crashing on purpose");
    setImmediate(() => process.exit(3));
    return;
  }
  const body = () => JSON.stringify({
    version: VERSION,
    pid: process.pid,
    port: Number(process.env.PORT),
    greeting: process.env.GREETING,
    secret: process.env.SECRET,
    host: req.headers.host,
    forwardedFor: req.headers["x-forwarded-for"],
    forwardedHost: req.headers["x-forwarded-host"],
    nodeOptions: process.env.NODE_OPTIONS,
    dataLimit: fs.readFileSync("/proc/self/limits", "utf8").split("\\n").find((l) => l.startsWith("Max data size")),
    cgroups: fs.readFileSync("/proc/self/cgroup", "utf8"),
    envNames: Object.keys(process.env).sort(),
  });
  res.setHeader("content-type", "application/json");
  const url = new URL(req.url, "http://app");
  if (url.pathname === "/slow") { setTimeout(() => res.end(body()), Number(url.searchParams.get("ms") || 200)); return; }
  res.end(body());
});
server.listen(Number(process.env.PORT), "127.0.0.1", () => console.log("listening on " + process.env.PORT));
`;

export interface AppFiles {
  version?: string;
  /** app.json content; a string is written verbatim, undefined writes none. */
  config?: Record<string, unknown> | string;
  extra?: Record<string, string>;
}

/** Writes the tiny app into `dir` (created) and returns it. */
export function writeApp(dir: string, files: AppFiles = {}): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "server.js"), SERVER_JS.replace("__VERSION__", files.version ?? "v1"));
  const config =
    "config" in files
      ? files.config
      : { start: "node server.js", healthcheck: "/", env: { GREETING: "hello" } };
  if (typeof config === "string") writeFileSync(join(dir, "app.json"), config);
  else if (config !== undefined) writeFileSync(join(dir, "app.json"), JSON.stringify(config));
  for (const [name, content] of Object.entries(files.extra ?? {})) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  return dir;
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      PATH: process.env.PATH ?? "",
      HOME: cwd,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
      GIT_CONFIG_NOSYSTEM: "1",
    },
  }).trim();
}

export interface Answer {
  status: number;
  body: string;
  json(): Record<string, unknown>;
}

const keepAlive = new Agent({ keepAlive: true });

/** A request to the apps listener for `<name>.<DOMAIN>`. */
export function hit(
  runtime: LocalRuntime,
  name: string,
  path = "/",
  opts: { agent?: Agent; host?: string; method?: string; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: runtime.appsPort,
        path,
        method: opts.method ?? "GET",
        agent: opts.agent ?? keepAlive,
        headers: { host: opts.host ?? `${name}.${DOMAIN}:${runtime.appsPort}` },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          resolve({
            status: res.statusCode ?? 0,
            body,
            json: () => JSON.parse(body) as Record<string, unknown>,
          });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

/** Polls `check` until it returns true (or throws after `timeoutMs`, naming `what`). */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Whether a process exists and is not a zombie (orphans are not always reaped in containers). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}
