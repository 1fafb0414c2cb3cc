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
    const result = await run(file, args, {
      cwd,
      env: o.env,
      signal: o.signal,
      onLine: o.log,
    });
    if (result.code !== 0) {
      const message = `${step.label} command "${step.command}" ${describeExit(result)}`;
      o.log(`error: ${message}`);
      throw new BuildError(message);
    }
  }
}
