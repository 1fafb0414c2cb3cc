import { type ChildProcess, spawn } from "node:child_process";
import { request } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const CLI = join(REPO_ROOT, "src", "cli", "main.ts");

export interface SlipwayProcess {
  proc: ChildProcess;
  /** Everything printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the first match of `pattern` in the output. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Runs the real `slipway` CLI (what `npm start` runs) as a child process; `root` is another tree's
 * (an earlier release's, test/db/upgrade.test.ts) when given.
 */
export function runSlipway(args: string[], env: Record<string, string>, root?: string): SlipwayProcess {
  const cli = root === undefined ? CLI : join(root, "src", "cli", "main.ts");
  const proc = spawn(process.execPath, ["--import", "tsx", cli, ...args], {
    cwd: root ?? REPO_ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    out += chunk.toString("utf8");
    for (const w of waiters) w();
  };
  proc.stdout?.on("data", onData);
  proc.stderr?.on("data", onData);
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
  return {
    proc,
    output: () => out,
    exited,
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern);
          if (m) {
            cleanup();
            resolve(m);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern}; output so far:\n${out}`));
        }, timeoutMs);
        const onExit = () => {
          cleanup();
          const m = out.match(pattern);
          if (m) resolve(m);
          else reject(new Error(`process exited before ${pattern}; output:\n${out}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
          proc.off("exit", onExit);
        };
        waiters.add(check);
        proc.on("exit", onExit);
        check();
      }),
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      return exited;
    },
  };
}

/** The status of `GET /` at 127.0.0.1:port with Host `host` (node:http: fetch may not set Host); 0 when unreachable. */
export function hostStatus(port: number, host: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: "/", headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
    req.end();
  });
}
