import { stat } from "node:fs/promises";
import { fail, insideSource, isObject } from "./config-checks.ts";

type Log = (line: string) => void;

/** The app config keys of a source's own Dockerfile: which file, and its `--build-arg`s. */
export interface DockerfileKeys {
  /** `"dockerfile"`: the file, relative to the source (checked inside it). */
  dockerfile?: string;
  /** `"build_args"`: an object of strings, given as `--build-arg NAME=value`. */
  buildArgs?: Record<string, string>;
}

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
