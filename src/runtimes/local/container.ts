import { execFile } from "node:child_process";
import { BuildError } from "../interface.ts";
import { describeExit, run } from "./exec.ts";

/** Environment for the engine CLI: the server's own settings for reaching its engine, nothing else. */
export function engineEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH || "/usr/local/bin:/usr/bin:/bin" };
  for (const name of [
    "HOME",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "CONTAINER_HOST",
    "XDG_RUNTIME_DIR",
  ]) {
    const value = process.env[name];
    if (value) env[name] = value;
  }
  return env;
}

function works(engine: string, args: string[], timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(engine, args, { env: engineEnv(), timeout: timeoutMs }, (err) => resolve(err === null));
  });
}

let detected: Promise<string | undefined> | undefined;

/**
 * The first of docker/podman whose `info` succeeds (the CLI alone is not enough: the daemon or
 * the rootless setup has to answer). Asked once per process; a failed answer is kept too.
 */
export function usableEngine(): Promise<string | undefined> {
  detected ??= (async () => {
    for (const engine of ["docker", "podman"]) {
      if (await works(engine, ["info", "--format", "{{.ID}}"], 5000)) return engine;
    }
    return undefined;
  })();
  return detected;
}

/** Removes a container by name, ignoring "no such container". */
export function removeContainer(engine: string, name: string): Promise<void> {
  return new Promise((resolve) => {
    execFile(engine, ["rm", "-f", name], { env: engineEnv(), timeout: 30_000 }, () => resolve());
  });
}

/** Removes every container labelled for a deployment (left over from a crash of Slipway). */
export function removeDeploymentContainers(engine: string, deploymentId: string): Promise<void> {
  return new Promise((resolve) => {
    execFile(
      engine,
      ["ps", "-aq", "--filter", `label=slipway.deployment=${deploymentId}`],
      { env: engineEnv(), timeout: 30_000 },
      (err, stdout) => {
        const ids = err ? [] : String(stdout).split(/\s+/).filter(Boolean);
        if (ids.length === 0) return resolve();
        execFile(engine, ["rm", "-f", ...ids], { env: engineEnv(), timeout: 30_000 }, () => resolve());
      },
    );
  });
}

/** Port the app listens on inside its container (given to it as PORT). */
export const CONTAINER_PORT = 8080;

/**
 * `run` arguments for one replica. Env values are passed by name (`-e NAME`) and read from the CLI's
 * environment, so secrets never appear in a process listing.
 */
export function runArgs(o: {
  name: string;
  image: string;
  hostPort: number;
  envNames: string[];
  memoryLimitMb?: number;
  deploymentId: string;
}): string[] {
  const args = ["run", "--rm", "--name", o.name, "--label", `slipway.deployment=${o.deploymentId}`];
  args.push("-p", `127.0.0.1:${o.hostPort}:${CONTAINER_PORT}`);
  for (const name of o.envNames) args.push("-e", name);
  if (o.memoryLimitMb !== undefined) args.push("--memory", `${o.memoryLimitMb}m`);
  args.push("--", o.image);
  return args;
}

/**
 * Pulls the image during the build phase, so the health timeout of a deploy is not spent on a
 * download. Without a usable engine there is nothing to pull; the deploy then says so.
 */
export async function pullImage(
  image: string,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<void> {
  const engine = await usableEngine();
  if (engine === undefined) {
    log(`No container engine is usable on this machine (docker/podman); ${image} cannot be pulled or run.`);
    return;
  }
  log(`$ ${engine} pull ${image}`);
  const result = await run(engine, ["pull", "--", image], {
    cwd: "/",
    env: engineEnv(),
    signal,
    onLine: log,
  });
  if (result.code !== 0) {
    const message = `${engine} pull ${image} ${describeExit(result)}`;
    log(`error: ${message}`);
    throw new BuildError(message);
  }
}
