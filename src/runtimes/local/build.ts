import { join } from "node:path";
import { BuildError } from "../interface.ts";
import { packageScript, readPackageJson } from "./app-config.ts";
import { describeExit, run } from "./exec.ts";
import { exists } from "./files.ts";
import type { Wrap } from "./sandbox.ts";

export interface BuildOptions {
  appDir: string;
  installCommand?: string;
  buildCommand?: string;
  env: Record<string, string>;
  /** Confines each command (the sandbox), or starts it as it is in `appDir`. */
  wrap: Wrap;
  signal: AbortSignal;
  log: (line: string) => void;
}

/** The commands a source needs: the given ones, else what its package.json implies. */
export async function buildSteps(
  appDir: string,
  installCommand: string | undefined,
  buildCommand: string | undefined,
): Promise<{ label: string; command: string }[]> {
  const steps: { label: string; command: string }[] = [];
  const pkg = await readPackageJson(appDir);
  let install = installCommand?.trim() || undefined;
  if (install === undefined) {
    if (
      (await exists(join(appDir, "package-lock.json"))) ||
      (await exists(join(appDir, "npm-shrinkwrap.json")))
    ) {
      install = "npm ci";
    } else if (await exists(join(appDir, "package.json"))) {
      install = "npm install";
    }
  }
  if (install !== undefined) steps.push({ label: "install", command: install });
  let build = buildCommand?.trim() || undefined;
  if (build === undefined && packageScript(pkg, "build") !== undefined) build = "npm run build";
  if (build !== undefined) steps.push({ label: "build", command: build });
  return steps;
}

/**
 * Runs install then build in the source tree. The commands are the user's own shell commands, so
 * they go through `sh -c`, confined by `wrap`, with the clean environment the caller passes (never
 * the server's).
 */
export async function runBuild(o: BuildOptions): Promise<void> {
  const steps = await buildSteps(o.appDir, o.installCommand, o.buildCommand);
  if (steps.length === 0) o.log("No install or build step for this source.");
  for (const step of steps) {
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
