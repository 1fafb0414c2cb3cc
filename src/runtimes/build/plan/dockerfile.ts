import { stat } from "node:fs/promises";
import { join, relative } from "node:path";
import type { AppConfig } from "../app-config.ts";
import { fail, insideSource, isObject } from "../config-checks.ts";
import type { DockerfilePlan } from "./types.ts";

/** The app config keys of a source's own Dockerfile: which file, and its `--build-arg`s. */
export interface DockerfileKeys {
  /** `"dockerfile"`: the file, relative to the source (checked inside it). */
  dockerfile?: string;
  /** `"build_args"`: an object of strings, given as `--build-arg NAME=value`. */
  buildArgs?: Record<string, string>;
}

type Log = (line: string) => void;

/** Names looked for at the root when nothing else says how to start the app, in this order. */
const ROOT_FILES = ["Dockerfile", "Containerfile"] as const;

/** `dockerfile` and `build_args` of an app config file, checked; wrong types are BuildErrors. */
export async function readDockerfileKeys(
  appDir: string,
  file: Record<string, unknown>,
  where: string,
  log: Log,
): Promise<DockerfileKeys> {
  const out: DockerfileKeys = {};
  if (file.dockerfile !== undefined) {
    const path = file.dockerfile;
    if (typeof path !== "string" || path.trim() === "")
      fail(log, `${where}: "dockerfile" must be a path inside the source, like "Dockerfile"`);
    const real = await insideSource(appDir, path, "dockerfile", log);
    if (real === undefined || !(await stat(real)).isFile())
      fail(log, `${where}: dockerfile "${path}" was not found in the source`);
    out.dockerfile = path;
  }
  if (file.build_args !== undefined) {
    const args = file.build_args;
    if (!isObject(args) || Object.values(args).some((v) => typeof v !== "string"))
      fail(log, `${where}: "build_args" must be an object of strings`);
    for (const name of Object.keys(args)) {
      // The name goes on podman's command line as NAME=value: it must be one word.
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
        fail(log, `${where}: build_args name "${name}" must be letters, digits and _`);
    }
    out.buildArgs = args as Record<string, string>;
  }
  return out;
}

/** A `Dockerfile` or `Containerfile` at the root of the source, if there is one. */
export async function rootDockerfile(appDir: string): Promise<string | undefined> {
  for (const name of ROOT_FILES) {
    try {
      if ((await stat(join(appDir, name))).isFile()) return name;
    } catch {
      // Not there: the next name.
    }
  }
  return undefined;
}

/**
 * The plan of a source built by its own Dockerfile: podman builds it (dockerfile.ts), the image's
 * CMD starts it. The deployment's install and build commands do not apply: the file says how.
 */
export function dockerfilePlan(appDir: string, file: string, config: AppConfig, log: Log): DockerfilePlan {
  // As given, but relative and normalised, for the log line and for --file.
  const rel = relative(appDir, join(appDir, file));
  const plan: DockerfilePlan = {
    kind: "dockerfile",
    summary: `Dockerfile (${rel}): podman build; start: the image's CMD`,
    steps: [],
    env: config.env,
    healthcheck: config.healthcheck,
    ...(config.healthTimeoutS === undefined ? {} : { healthTimeoutS: config.healthTimeoutS }),
    toolchainEnv: {},
    file: rel,
    buildArgs: config.buildArgs ?? {},
    extraLines: config.dockerfileLines ?? [],
  };
  log(`slipway: detected ${plan.summary}`);
  return plan;
}
