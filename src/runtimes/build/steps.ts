import { join } from "node:path";
import { BuildError } from "../interface.ts";
import type { Wrap } from "../shared/exec.ts";
import { describeExit, run } from "../shared/exec.ts";
import { exists } from "../shared/files.ts";
import { packageScript, readPackageJson } from "./app-config.ts";

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

/** package.json fields that name packages to install. */
const DEPENDENCY_FIELDS = [
  "dependencies",
  "devDependencies",
  "optionalDependencies",
  "peerDependencies",
  "bundleDependencies",
  "bundledDependencies",
  "workspaces",
];
/** Scripts npm runs as part of an install. */
const INSTALL_SCRIPTS = ["preinstall", "install", "postinstall", "preprepare", "prepare", "postprepare"];

function nonEmpty(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object" && value !== null) return Object.keys(value).length > 0;
  return value !== undefined && value !== null && value !== false;
}

/**
 * Whether `npm install` would do anything: a package with nothing to install and no install
 * scripts skips the step, which is most of a small app's deploy time.
 */
export function needsInstall(pkg: Record<string, unknown> | undefined): boolean {
  if (pkg === undefined) return true;
  return (
    DEPENDENCY_FIELDS.some((field) => nonEmpty(pkg[field])) ||
    INSTALL_SCRIPTS.some((name) => packageScript(pkg, name) !== undefined)
  );
}

/**
 * The commands a source needs: the given ones, else what its package.json implies (no install
 * when it declares nothing to install).
 */
export async function buildSteps(
  appDir: string,
  installCommand: string | undefined,
  buildCommand: string | undefined,
): Promise<{ label: string; command: string }[]> {
  const steps: { label: string; command: string }[] = [];
  const pkg = await readPackageJson(appDir);
  let install = installCommand?.trim() || undefined;
  if (install === undefined && (await exists(join(appDir, "package.json"))) && needsInstall(pkg)) {
    if (
      (await exists(join(appDir, "package-lock.json"))) ||
      (await exists(join(appDir, "npm-shrinkwrap.json")))
    ) {
      install = "npm ci";
    } else {
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
  if (!steps.some((s) => s.label === "install") && (await readPackageJson(o.appDir)) !== undefined) {
    o.log("No install step: package.json declares no dependencies and no install scripts.");
  }
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
