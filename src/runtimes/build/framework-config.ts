import { execFile } from "node:child_process";
import { realpathSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { fail, insideSource, isObject } from "./config-checks.ts";
import { parseDotenv } from "./dotenv.ts";

/**
 * The hosted service's framework config keys, read from the same file as Slipway's app config
 * (app-config.ts): `env` as a dotenv path, `dependencies`, `python_version`, `node_version` and
 * `dockerfile_lines`.
 */

type Log = (line: string) => void;

/** The framework keys as AppConfig carries them (its comments say what each is for). */
export interface FrameworkKeys {
  dependencies?: string[];
  pythonVersion?: string;
  nodeVersion?: string;
  dockerfileLines?: string[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A dotenv file is a handful of settings; a bigger one is a mistake, not something to hold in memory. */
const MAX_DOTENV_BYTES = 1024 * 1024;
/** `3.11`, `20`, `20.11.1` (a leading `v` allowed). */
const VERSION = /^v?(\d+(?:\.\d+){0,2})$/;
/** The sandbox's PATH (sandbox.ts), where a build finds `node`. */
const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin";
const SYSTEM_DIRS = ["/usr/", "/bin/", "/lib/", "/sbin/"];

/** `env`: an object of strings, or the path of a dotenv file inside the source. */
export async function readEnv(
  appDir: string,
  value: unknown,
  where: string,
  log: Log,
): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  if (value === undefined) return env;
  if (typeof value === "string") return readDotenv(appDir, value, where, log);
  if (!isObject(value))
    fail(log, `${where}: "env" must be an object of strings or the path of a dotenv file in the source`);
  for (const [name, v] of Object.entries(value)) {
    if (!ENV_NAME.test(name)) fail(log, `${where}: env name "${name}" is not a valid variable name`);
    if (typeof v !== "string") fail(log, `${where}: env "${name}" must be a string`);
    env[name] = v;
  }
  return env;
}

async function readDotenv(
  appDir: string,
  path: string,
  where: string,
  log: Log,
): Promise<Record<string, string>> {
  if (path.trim() === "") fail(log, `${where}: "env" must name a dotenv file, not be empty`);
  const real = await insideSource(appDir, path, `${where}: env file`, log);
  if (real === undefined) fail(log, `${where}: env file "${path}" was not found in the source`);
  const info = await stat(real);
  if (!info.isFile()) fail(log, `${where}: env file "${path}" is not a file`);
  if (info.size > MAX_DOTENV_BYTES) fail(log, `${where}: env file "${path}" is over 1 MiB`);
  const parsed = parseDotenv(await readFile(real, "utf8"));
  // Line numbers only: a line that did not parse may still hold a secret.
  if (parsed.skipped.length > 0)
    log(`slipway: env file "${path}": skipped line(s) ${parsed.skipped.join(", ")}, not NAME=value`);
  const env: Record<string, string> = {};
  for (const { name, line, value } of parsed.entries) {
    if (!ENV_NAME.test(name))
      fail(log, `${where}: env file "${path}" line ${line}: "${name}" is not a valid variable name`);
    env[name] = value;
  }
  return env;
}

function strings(value: unknown, key: string, where: string, log: Log): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || v.trim() === ""))
    fail(log, `${where}: "${key}" must be an array of non-empty strings`);
  return value as string[];
}

/** Whether a `dependencies` entry names a directory of the source rather than a requirement spec. */
export function isLocalPath(dep: string): boolean {
  if (/^[a-z][a-z0-9+.-]*:/i.test(dep) || dep.includes("@")) return false;
  return dep.startsWith(".") || dep.startsWith("/") || dep.includes("/");
}

async function readDependencies(appDir: string, value: unknown, where: string, log: Log): Promise<string[]> {
  const deps = strings(value, "dependencies", where, log);
  for (const dep of deps) {
    // pip would read a file: URL from anywhere the build can see; a path in the source says the same.
    if (/^file:/i.test(dep)) fail(log, `${where}: dependency "${dep}": use a path relative to the source`);
    if (!isLocalPath(dep)) continue;
    // `./pkg[extra]` installs ./pkg with its extras: the path is what must be in the source.
    const real = await insideSource(appDir, dep.replace(/\[[^\]]*\]$/, ""), `${where}: dependency`, log);
    if (real === undefined) fail(log, `${where}: dependency "${dep}" was not found in the source`);
  }
  return deps;
}

function version(value: unknown, key: string, example: string, where: string, log: Log): string {
  // A JSON number is refused: 3.10 would be read as 3.1.
  const m = typeof value === "string" ? VERSION.exec(value.trim()) : null;
  if (m === null || m[1] === undefined)
    fail(log, `${where}: "${key}" must be a version string like "${example}"`);
  return m[1];
}

/** The PATH a sandboxed build sees: the system's, after the server's own node when it lives elsewhere. */
function buildPath(): string {
  const node = realpathSync(process.execPath);
  return SYSTEM_DIRS.some((d) => node.startsWith(d)) ? SYSTEM_PATH : `${dirname(node)}:${SYSTEM_PATH}`;
}

/** The version of the `node` a build runs (`20.11.1`), or undefined when there is none. */
export function buildNodeVersion(): Promise<string | undefined> {
  return new Promise((done) => {
    execFile("node", ["--version"], { timeout: 15_000, env: { PATH: buildPath() } }, (err, out) => {
      done(err ? undefined : out.trim().replace(/^v/, ""));
    });
  });
}

/** `20` matches 20.x.y, `20.11` matches 20.11.x: the parts given must be equal. */
export function versionMatches(asked: string, actual: string): boolean {
  const have = actual.split(".");
  return asked.split(".").every((part, i) => Number(part) === Number(have[i]));
}

/** The framework config keys of `file`, checked; wrong types are BuildErrors. */
export async function readFrameworkKeys(
  appDir: string,
  file: Record<string, unknown>,
  where: string,
  log: Log,
): Promise<FrameworkKeys> {
  const out: FrameworkKeys = {};
  if (file.dependencies !== undefined)
    out.dependencies = await readDependencies(appDir, file.dependencies, where, log);
  if (file.python_version !== undefined)
    out.pythonVersion = version(file.python_version, "python_version", "3.11", where, log);
  if (file.dockerfile_lines !== undefined) {
    const lines = strings(file.dockerfile_lines, "dockerfile_lines", where, log);
    if (lines.some((l) => /[\r\n]/.test(l)))
      fail(log, `${where}: each of "dockerfile_lines" must be one line (no line breaks)`);
    out.dockerfileLines = lines;
  }
  if (file.node_version !== undefined) {
    const asked = version(file.node_version, "node_version", "20", where, log);
    const actual = await buildNodeVersion();
    if (actual === undefined)
      fail(log, `${where}: node_version "${asked}" is asked for, but this machine has no node for builds`);
    if (!versionMatches(asked, actual))
      fail(log, `${where}: node_version "${asked}" is asked for, but this machine's node is ${actual}`);
    out.nodeVersion = asked;
  }
  return out;
}
