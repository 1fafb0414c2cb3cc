import { execFile, spawn } from "node:child_process";
import { forEachLine } from "./lines.ts";
import { killGroup } from "./process-group.ts";
import { trackGroup } from "./spawned-groups.ts";

/** How a command is started: the program, its arguments and the host directory to start it in. */
export interface Spawnable {
  file: string;
  args: string[];
  cwd: string;
}

/** Turns a command (argv) into what to spawn: confined, or as it is. */
export type Wrap = (argv: string[]) => Spawnable;

export interface RunOptions {
  cwd: string;
  env: Record<string, string>;
  signal: AbortSignal;
  onLine: (line: string) => void;
  /** How long a process group gets between SIGTERM and SIGKILL once aborted. */
  graceMs?: number;
  /** Written to the command's stdin, then closed (a password, never an argument). */
  stdin?: string;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The error an aborted phase throws: the signal's reason when it is an Error. */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error("interrupted");
}

/**
 * Runs `file args` (never through a shell unless `file` is `sh`), streaming stdout and stderr line
 * by line. On abort the whole process group is killed and the abort reason is thrown.
 */
export function run(file: string, args: string[], opts: RunOptions): Promise<RunResult> {
  if (opts.signal.aborted) return Promise.reject(abortError(opts.signal));
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      // stdin is a pipe ended at once (EOF, as /dev/null would be) unless there is something to write.
      stdio: ["pipe", "pipe", "pipe"],
    });
    trackGroup(child, opts.cwd);
    child.stdin.on("error", () => {});
    child.stdin.end(opts.stdin ?? "");
    let killing: Promise<void> | undefined;
    const killAll = () => {
      if (child.pid !== undefined) killing ??= killGroup(child.pid, opts.graceMs ?? 2000);
      return killing ?? Promise.resolve();
    };
    opts.signal.addEventListener("abort", killAll, { once: true });
    forEachLine(child.stdout, opts.onLine);
    forEachLine(child.stderr, opts.onLine);
    child.once("error", (err) => {
      opts.signal.removeEventListener("abort", killAll);
      reject(err);
    });
    // Whatever the command left running in the background would hold the pipes open: end it too.
    child.once("exit", () => void killAll());
    // "close" comes after both pipes ended, so every line has been delivered.
    child.once("close", (code, sig) => {
      opts.signal.removeEventListener("abort", killAll);
      const settle = () => {
        if (opts.signal.aborted) reject(abortError(opts.signal));
        else resolve({ code, signal: sig });
      };
      killAll().then(settle, settle);
    });
  });
}

/** Describes how a process ended, for log lines. */
export function describeExit(result: RunResult): string {
  return result.signal ? `was killed by ${result.signal}` : `exited with code ${result.code}`;
}

/** Whether `file args` exits 0 within 15 s (output ignored); never throws. */
export function succeeds(file: string, args: string[]): Promise<boolean> {
  return new Promise((done) => {
    execFile(file, args, { timeout: 15_000 }, (err) => done(err === null));
  });
}
