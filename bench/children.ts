import { type ChildProcess, spawn } from "node:child_process";
import { dirname, isAbsolute, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

export interface Child<T> {
  info: T;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts a TypeScript script (a name in this folder, or an absolute path with the checkout it
 * belongs to as `cwd`) in its own process and reads the JSON line it prints when ready.
 */
export function startChild<T>(
  script: string,
  env: Record<string, string>,
  stdin?: string,
  cwd?: string,
): Promise<Child<T>> {
  const proc = spawn(
    process.execPath,
    ["--import", "tsx", isAbsolute(script) ? script : join(here, script)],
    {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  if (stdin !== undefined) proc.stdin?.end(stdin);
  else proc.stdin?.end();
  return new Promise((resolve, reject) => {
    let out = "";
    proc.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (!line) return;
      proc.stdout?.removeAllListeners("data");
      resolve({
        info: JSON.parse(line) as T,
        proc,
        stop: () =>
          new Promise((done) => {
            if (proc.exitCode !== null) return done();
            proc.once("exit", () => done());
            proc.kill("SIGTERM");
          }),
      });
    });
    proc.once("exit", (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
  });
}
