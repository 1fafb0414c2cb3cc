import { BuildError } from "../interface.ts";
import type { Wrap } from "../shared/exec.ts";
import { describeExit, run } from "../shared/exec.ts";
import type { BuildStep } from "./plan/types.ts";

export interface BuildOptions {
  appDir: string;
  /** The plan's steps (plan/plan.ts), in order. */
  steps: BuildStep[];
  env: Record<string, string>;
  /** Confines each command (the sandbox), or starts it as it is in `appDir`. */
  wrap: Wrap;
  signal: AbortSignal;
  log: (line: string) => void;
}

/** How much of a failed step's output its BuildError carries (it becomes the status_message). */
const TAIL_LINES = 40;
const SUMMARY_LINES = 5;
const SUMMARY_CHARS = 500;

const ERROR_LIKE = /error|ERR!|ERR_|fatal/i;
/** Error lines that only point elsewhere or repeat a code: no help in a one-line summary. */
const NOISE = [/complete log of this run/i, /^npm (error|ERR!)( code)?( \w+)?\s*$/, /^\s*$/];

/**
 * What a failed step said about why, in the installer's own words: among its last lines, the
 * first few that look like errors (npm and pip print the cause first, hints after), else its last
 * few lines; at most SUMMARY_LINES lines and SUMMARY_CHARS characters, joined by " | ".
 */
export function failureSummary(tail: readonly string[]): string {
  const lines = tail.map((l) => l.trim()).filter((l) => !NOISE.some((n) => n.test(l)));
  const errors = lines.filter((l) => ERROR_LIKE.test(l));
  const picked: string[] = [];
  for (const l of errors.length > 0 ? errors : lines.slice(-SUMMARY_LINES)) {
    if (picked.length === SUMMARY_LINES) break;
    if (picked.at(-1) !== l) picked.push(l);
  }
  const text = picked.join(" | ");
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1)}…` : text;
}

/**
 * Runs install then build in the source tree. The commands are the user's own shell commands, so
 * they go through `sh -c`, confined by `wrap`, with the clean environment the caller passes (never
 * the server's).
 */
export async function runBuild(o: BuildOptions): Promise<void> {
  if (o.steps.length === 0) o.log("No install or build step for this source.");
  for (const step of o.steps) {
    o.log(`$ ${step.command}`);
    const { file, args, cwd } = o.wrap(["sh", "-c", step.command]);
    const tail: string[] = [];
    const result = await run(file, args, {
      cwd,
      env: o.env,
      signal: o.signal,
      onLine: (line) => {
        o.log(line);
        // Lines are capped here too: the summary never holds more than SUMMARY_CHARS anyway.
        tail.push(line.slice(0, SUMMARY_CHARS));
        if (tail.length > TAIL_LINES) tail.shift();
      },
    });
    if (result.code !== 0) {
      const summary = failureSummary(tail);
      const exit = `${step.label} command "${step.command}" ${describeExit(result)}`;
      const message = summary === "" ? exit : `${exit}: ${summary}`;
      o.log(`error: ${message}`);
      throw new BuildError(message);
    }
  }
}
