import { execFile } from "node:child_process";

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

const TIMEOUT_MS = 15_000;

/**
 * Runs `git` without a shell, with a deadline, and with an environment that cannot point it at
 * another repository. `ceiling` stops git from treating a parent directory's repository as the
 * one asked about. Resolves with the exit code; rejects only when git cannot run at all.
 */
export function git(args: string[], opts: { cwd: string; ceiling?: string }): Promise<GitResult> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: process.env.HOME ?? "/",
    LANG: "C",
    GIT_TERMINAL_PROMPT: "0",
  };
  if (opts.ceiling !== undefined) env.GIT_CEILING_DIRECTORIES = opts.ceiling;
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      args,
      { cwd: opts.cwd, env, timeout: TIMEOUT_MS, killSignal: "SIGKILL", maxBuffer: 4 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err === null) return resolve({ code: 0, stdout, stderr });
        const code = (err as { code?: unknown }).code;
        // A number is git's own exit status; anything else (ENOENT, timeout kill) means git did not answer.
        if (typeof code === "number" && !err.killed) return resolve({ code, stdout, stderr });
        reject(new Error(err.killed ? `git ${args[0]} timed out` : `git could not run: ${err.message}`));
      },
    );
  });
}
