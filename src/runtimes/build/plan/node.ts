import { join } from "node:path";
import { exists } from "../../shared/files.ts";
import { packageScript, readPackageJson } from "../app-config.ts";
import type { Detector, LanguageDetection } from "./detection.ts";
import type { BuildStep } from "./types.ts";

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

/** A Node source: one with a package.json. npm installs it (`npm ci` with a lockfile). */
export const detectNode: Detector = async ({ appDir, indexes, log }) => {
  if (!(await exists(join(appDir, "package.json")))) return undefined;
  const pkg = await readPackageJson(appDir);
  const evidence = ["package.json"];
  const steps: BuildStep[] = [];
  let lockfile: string | undefined;
  for (const name of ["package-lock.json", "npm-shrinkwrap.json"]) {
    if (lockfile === undefined && (await exists(join(appDir, name)))) lockfile = name;
  }
  if (lockfile !== undefined) evidence.push(lockfile);
  if (needsInstall(pkg)) steps.push({ label: "install", command: lockfile ? "npm ci" : "npm install" });
  else log("No npm install: package.json declares no dependencies and no install scripts.");
  if (packageScript(pkg, "build") !== undefined) steps.push({ label: "build", command: "npm run build" });
  const detection: LanguageDetection = {
    language: "node",
    evidence,
    steps,
    toolchainEnv: indexes.npm === undefined ? {} : { npm_config_registry: indexes.npm },
  };
  if (packageScript(pkg, "start") !== undefined) detection.start = "npm start";
  if (lockfile !== undefined)
    detection.cache = { dirs: ["node_modules"], keyFiles: ["package.json", lockfile] };
  return detection;
};
