import { readFile, realpath, rename, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { fail, insideSource, isObject } from "./config-checks.ts";
import { readDockerfileKeys } from "./dockerfile-keys.ts";
import { readEnv, readFrameworkKeys } from "./framework-config.ts";

// Builds and detectors fail through it; it lives beside the path checks both config readers share.
export { fail };

/** What `activate` needs, resolved once by `build` and stored beside it (so a restart needs no rebuild). */
export type BuildRecord =
  | {
      version: 1;
      kind: "process";
      start: string;
      /** The queue workers' command (app config `worker`); none: the app has no queue workers. */
      worker?: string;
      healthcheck: string;
      /** App config `healthcheck_timeout_s`; the server's maximum bounds it at activation. */
      healthTimeoutS?: number;
      env: Record<string, string>;
      /** The app config asks for its own Redis (`"redis": true`). */
      redis?: boolean;
    }
  | {
      version: 1;
      kind: "static";
      /** The directory Slipway serves, relative to the app directory; no app process runs. */
      root: string;
      /** A missing path without an extension is answered with index.html (a single-page app). */
      spa: boolean;
      healthcheck: string;
      env: Record<string, string>;
    }
  | {
      version: 1;
      kind: "image";
      /** The image id to run (the reference itself when no engine could resolve it). */
      image: string;
      /** The reference as the revision gave it. */
      ref?: string;
      /** The deployment's `image_version` once this revision is deployed. */
      imageVersion?: string | null;
      healthcheck: string;
      /** A Dockerfile source's app config `healthcheck_timeout_s`. */
      healthTimeoutS?: number;
      env: Record<string, string>;
    };

/** package.json as far as we read it; undefined when absent or unreadable. */
export async function readPackageJson(appDir: string): Promise<Record<string, unknown> | undefined> {
  try {
    const parsed: unknown = JSON.parse(await readFile(resolve(appDir, "package.json"), "utf8"));
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

export function packageScript(pkg: Record<string, unknown> | undefined, name: string): string | undefined {
  const scripts = pkg?.scripts;
  if (!isObject(scripts)) return undefined;
  const script = scripts[name];
  return typeof script === "string" && script.trim() !== "" ? script : undefined;
}

/** Reads the app config file the revision names, refusing paths that leave the source tree. */
async function readConfigFile(
  appDir: string,
  configPath: string,
  log: (line: string) => void,
): Promise<Record<string, unknown>> {
  const real = await insideSource(appDir, configPath, "app config path", log);
  if (real === undefined) fail(log, `app config file "${configPath}" was not found in the source`);
  if (real === (await realpath(appDir)))
    fail(log, `app config path "${configPath}" points outside the source`);
  let text: string;
  try {
    text = await readFile(real, "utf8");
  } catch (err) {
    fail(log, `app config file "${configPath}" could not be read: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    fail(log, `app config file "${configPath}" is not valid JSON: ${(err as Error).message}`);
  }
  if (!isObject(parsed)) fail(log, `app config file "${configPath}" must hold a JSON object`);
  return parsed;
}

/** The app config file as read: what it says, checked; the build plan (plan/plan.ts) fills the rest. */
export interface AppConfig {
  /** The API process's command, when the file names one. */
  start?: string;
  worker?: string;
  healthcheck: string;
  healthTimeoutS?: number;
  /** `env` as an object, or read from the dotenv file it names. */
  env: Record<string, string>;
  /** `"redis": true`: the app asks for its own Redis. */
  redis?: boolean;
  /** Framework config `dependencies`: `.`, local package paths (checked inside the source), requirement specs. */
  dependencies?: string[];
  /** Framework config `python_version` (`"3.11"`): the Python build picks its interpreter from it. */
  pythonVersion?: string;
  /** Framework config `node_version` (`"20"`), already checked against the machine's node. */
  nodeVersion?: string;
  /** Framework config `dockerfile_lines`: appended to an image's Containerfile after the build steps. */
  dockerfileLines?: string[];
  /** `"dockerfile"`: the source's own Dockerfile (or Containerfile), relative to it. */
  dockerfile?: string;
  /** `"build_args"`: `--build-arg`s of a Dockerfile build (never secrets). */
  buildArgs?: Record<string, string>;
}

/**
 * The keys Slipway acts on: its own app config's and those of the hosted service's framework config
 * it understands. Any other key (`graphs`, `store`, `auth`, …) is named in one log line and ignored.
 */
export const ACTED_ON_KEYS: readonly string[] = [
  "start",
  "worker",
  "healthcheck",
  "healthcheck_timeout_s",
  "env",
  "redis",
  "dependencies",
  "python_version",
  "node_version",
  "dockerfile_lines",
  "dockerfile",
  "build_args",
];

/**
 * The app config: Slipway's keys (`start`, `worker`, `healthcheck`, `healthcheck_timeout_s`, `env`,
 * `redis`) and the hosted service's framework config keys (framework-config.ts) from `configPath`
 * (when given). Anything malformed is a BuildError after a log line saying why.
 */
export async function readAppConfig(
  appDir: string,
  configPath: string | undefined,
  log: (line: string) => void,
): Promise<AppConfig> {
  const file = configPath ? await readConfigFile(appDir, configPath, log) : {};
  const where = configPath ? `app config "${configPath}"` : "app config";
  const ignored = Object.keys(file).filter((key) => !ACTED_ON_KEYS.includes(key));
  if (ignored.length > 0) log(`slipway: framework config keys not acted on here: ${ignored.join(", ")}`);

  let start: string | undefined;
  if (file.start !== undefined) {
    if (typeof file.start !== "string" || file.start.trim() === "") {
      fail(log, `${where}: "start" must be a non-empty string`);
    }
    start = file.start;
  }

  let worker: string | undefined;
  if (file.worker !== undefined) {
    if (typeof file.worker !== "string" || file.worker.trim() === "") {
      fail(log, `${where}: "worker" must be a non-empty string (the queue workers' command)`);
    }
    worker = file.worker;
  }

  let healthTimeoutS: number | undefined;
  if (file.healthcheck_timeout_s !== undefined) {
    const t = file.healthcheck_timeout_s;
    if (typeof t !== "number" || !Number.isInteger(t) || t < 1) {
      fail(log, `${where}: "healthcheck_timeout_s" must be a whole number of seconds, at least 1`);
    }
    healthTimeoutS = t;
  }

  let healthcheck = "/";
  if (file.healthcheck !== undefined) {
    if (typeof file.healthcheck !== "string" || !/^\/[^\s]*$/.test(file.healthcheck)) {
      fail(log, `${where}: "healthcheck" must be a URL path starting with "/"`);
    }
    healthcheck = file.healthcheck;
  }

  const env = await readEnv(appDir, file.env, where, log);
  if (file.redis !== undefined && typeof file.redis !== "boolean") {
    fail(log, `${where}: "redis" must be true or false`);
  }
  const framework = await readFrameworkKeys(appDir, file, where, log);
  const docker = await readDockerfileKeys(appDir, file, where, log);
  return {
    ...(start === undefined ? {} : { start }),
    ...(worker === undefined ? {} : { worker }),
    healthcheck,
    ...(healthTimeoutS === undefined ? {} : { healthTimeoutS }),
    env,
    ...(file.redis === true ? { redis: true } : {}),
    ...framework,
    ...docker,
  };
}

export async function writeBuildRecord(path: string, record: BuildRecord): Promise<void> {
  // Written to a temporary name and renamed, so a crash never leaves a half record that looks built.
  await writeFile(`${path}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  await rename(`${path}.tmp`, path);
}

export async function readBuildRecord(path: string): Promise<BuildRecord | undefined> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, "utf8"));
  } catch {
    return undefined;
  }
  if (!isObject(parsed) || parsed.version !== 1 || typeof parsed.healthcheck !== "string") return undefined;
  const env = isObject(parsed.env) ? parsed.env : {};
  const strings: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === "string") strings[k] = v;
  if (parsed.kind === "process" && typeof parsed.start === "string") {
    return {
      version: 1,
      kind: "process",
      start: parsed.start,
      ...(typeof parsed.worker === "string" ? { worker: parsed.worker } : {}),
      healthcheck: parsed.healthcheck,
      ...(typeof parsed.healthTimeoutS === "number" ? { healthTimeoutS: parsed.healthTimeoutS } : {}),
      env: strings,
      ...(parsed.redis === true ? { redis: true } : {}),
    };
  }
  if (parsed.kind === "static" && typeof parsed.root === "string") {
    return {
      version: 1,
      kind: "static",
      root: parsed.root,
      spa: parsed.spa === true,
      healthcheck: parsed.healthcheck,
      env: strings,
    };
  }
  if (parsed.kind === "image" && typeof parsed.image === "string") {
    return {
      version: 1,
      kind: "image",
      image: parsed.image,
      ref: typeof parsed.ref === "string" ? parsed.ref : undefined,
      imageVersion: typeof parsed.imageVersion === "string" ? parsed.imageVersion : null,
      healthcheck: parsed.healthcheck,
      ...(typeof parsed.healthTimeoutS === "number" ? { healthTimeoutS: parsed.healthTimeoutS } : {}),
      env: strings,
    };
  }
  return undefined;
}
