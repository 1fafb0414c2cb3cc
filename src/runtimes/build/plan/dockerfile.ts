import { stat } from "node:fs/promises";
import { join, relative } from "node:path";
import type { AppConfig } from "../app-config.ts";
import type { PackageIndexes } from "./detection.ts";
import { pipEnv } from "./python.ts";
import type { DockerfilePlan } from "./types.ts";

type Log = (line: string) => void;

/** Names looked for at the root when nothing else says how to start the app, in this order. */
const ROOT_FILES = ["Dockerfile", "Containerfile"] as const;

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
 * The configured package mirrors as build args: a Dockerfile that declares `ARG PIP_INDEX_URL` (or
 * NPM_CONFIG_REGISTRY, …) installs from them; build args are not kept in the image's config.
 */
export function mirrorBuildArgs(indexes: PackageIndexes): Record<string, string> {
  const { PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_TRUSTED_HOST } = pipEnv(indexes);
  const args: Record<string, string> = {};
  if (indexes.npm !== undefined) args.NPM_CONFIG_REGISTRY = indexes.npm;
  if (PIP_INDEX_URL !== undefined) args.PIP_INDEX_URL = PIP_INDEX_URL;
  if (PIP_EXTRA_INDEX_URL !== undefined) args.PIP_EXTRA_INDEX_URL = PIP_EXTRA_INDEX_URL;
  if (PIP_TRUSTED_HOST !== undefined) args.PIP_TRUSTED_HOST = PIP_TRUSTED_HOST;
  return args;
}

/**
 * The plan of a source built by its own Dockerfile: podman builds it (dockerfile.ts), the image's
 * CMD starts it. The deployment's install and build commands do not apply: the file says how.
 */
export function dockerfilePlan(
  appDir: string,
  file: string,
  config: AppConfig,
  indexes: PackageIndexes,
  log: Log,
): DockerfilePlan {
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
    // The app config's own build args win over the mirrors'.
    buildArgs: { ...mirrorBuildArgs(indexes), ...config.buildArgs },
    extraLines: config.dockerfileLines ?? [],
  };
  log(`slipway: detected ${plan.summary}`);
  const mirrors = Object.keys(mirrorBuildArgs(indexes));
  if (mirrors.length > 0)
    log(
      `slipway: package mirrors are build args ${mirrors.join(", ")}: declare ARG <name> to install from them`,
    );
  return plan;
}
