import { randomBytes } from "node:crypto";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { type ContainerNetwork, type Engine, EngineFinder, execEngine } from "./containers/engine.ts";
import { writeEnvFile } from "./containers/env-file.ts";

/**
 * Image revisions as replicas. A replica's process is `<engine> create … && <engine> start
 * --attach <name>` (one small shell), so the replica code supervises a container exactly like an
 * app process: its output is the log, its exit is the crash, ending its group ends the CLI.
 * Containers are labelled so teardown and the next Slipway find them after a SIGKILL.
 */

export { EngineFinder };

/** Port the app listens on inside its container on a bridge network (given to it as PORT). */
export const CONTAINER_PORT = 8080;

export const DEPLOYMENT_LABEL = "slipway.deployment";
export const REVISION_LABEL = "slipway.revision";
/** Names the data dir (hashed): teardown and leftovers only ever touch this Slipway's containers. */
export const OWNER_LABEL = "slipway.owner";

/** One container replica, as `Launch` of kind "container" in replica.ts carries it. */
export interface ContainerLaunch {
  engine: Engine;
  /** The image id from the build record. */
  image: string;
  name: string;
  deploymentId: string;
  revisionId: string;
  owner: string;
  network: ContainerNetwork;
  /** Where the env file is written for each start (the revision's directory); removed before start. */
  envDir: string;
  memoryLimitMb?: number;
  cpus?: number;
  /** Seconds between SIGTERM and SIGKILL when the container is stopped. */
  stopTimeoutS: number;
}

export interface ContainerSettings {
  engine: Engine;
  image: string;
  deploymentId: string;
  revisionId: string;
  owner: string;
  network: ContainerNetwork;
  envDir: string;
  resources: Record<string, unknown>;
  stopGraceMs: number;
  log: (line: string) => void;
}

function positive(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : undefined;
}

/**
 * The launch of replica `index` of an image revision. Limits: `memory_limit_mb` (else
 * `memory_mb`) as `--memory`, `cpu_limit` (else `cpu`) as `--cpus`, at most this machine's cores.
 */
export function containerLaunches(s: ContainerSettings): (index: number) => ContainerLaunch {
  const memoryLimitMb = positive(s.resources.memory_limit_mb) ?? positive(s.resources.memory_mb);
  let cpus = positive(s.resources.cpu_limit) ?? positive(s.resources.cpu);
  const cores = availableParallelism();
  if (cpus !== undefined && cpus > cores) {
    s.log(`slipway: cpu ${cpus} is above this machine's ${cores} cores; limiting each container to ${cores}`);
    cpus = cores;
  }
  const limits = [
    memoryLimitMb === undefined ? undefined : `--memory ${Math.floor(memoryLimitMb)}m`,
    cpus === undefined ? undefined : `--cpus ${cpus}`,
  ].filter(Boolean);
  if (limits.length > 0) s.log(`slipway: container limits: ${limits.join(" ")}`);
  // Two starts of one revision may overlap (a revision activated beside its own crashed replicas).
  const tag = randomBytes(2).toString("hex");
  return (index) => ({
    engine: s.engine,
    image: s.image,
    name: `slipway-${s.deploymentId.slice(0, 8)}-${s.revisionId.slice(0, 8)}-${index}-${tag}`,
    deploymentId: s.deploymentId,
    revisionId: s.revisionId,
    owner: s.owner,
    network: s.network,
    envDir: s.envDir,
    memoryLimitMb: memoryLimitMb === undefined ? undefined : Math.floor(memoryLimitMb),
    cpus,
    stopTimeoutS: Math.max(1, Math.ceil(s.stopGraceMs / 1000)),
  });
}

/** The PORT a container app is given: its own port on a bridge, the published one on the host's network. */
export function appPort(launch: ContainerLaunch, hostPort: number): number {
  return launch.network === "host" ? hostPort : CONTAINER_PORT;
}

/** Engine commands are not free: while a container is not running yet, its pid is asked this often. */
const PID_RETRY_MS = 1000;

/**
 * The host pid of a replica's container once it runs (the engine's `inspect`), remembered once
 * known; undefined before. What port-check.ts reads the container's listening sockets from.
 */
export function containerPidFinder(launch: ContainerLaunch): () => Promise<number | undefined> {
  let pid: number | undefined;
  let askedAt = Number.NEGATIVE_INFINITY;
  return async () => {
    if (pid !== undefined || Date.now() - askedAt < PID_RETRY_MS) return pid;
    askedAt = Date.now();
    const r = await execEngine(
      launch.engine,
      ["inspect", "--format", "{{.State.Pid}}", "--", launch.name],
      10_000,
    );
    const found = r.ok ? Number(r.stdout.trim()) : 0;
    if (Number.isInteger(found) && found > 0) pid = found;
    return pid;
  };
}

export interface SpawnCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * Removes the env file whatever `create` did, then runs the container attached, so the CLI's exit
 * is the container's. The file's path and the container's name are the only data on any argv.
 */
const CREATE_THEN_START = `f=$1; n=$2; shift 2
"$@" >/dev/null; rc=$?
rm -f -- "$f"
[ "$rc" -eq 0 ] || exit "$rc"
exec "$1" start --attach "$n"`;

/**
 * The command that starts `launch` serving on `hostPort`. The app's environment (with PORT) goes
 * into a 0600 env file, read by `create` and deleted before the container starts; values an env
 * file cannot hold (line breaks) are passed by name from the CLI's own environment instead.
 */
export function containerCommand(
  launch: ContainerLaunch,
  hostPort: number,
  appEnv: Record<string, string>,
): SpawnCommand {
  const port = appPort(launch, hostPort);
  const envFile = join(launch.envDir, `${launch.name}.env`);
  let byName: Record<string, string>;
  try {
    byName = writeEnvFile(envFile, { ...appEnv, PORT: String(port) });
  } catch (err) {
    // Fails like a container that exits at once, so the replica's usual crash handling applies.
    const why = `slipway: the env file of ${launch.name} could not be written: ${(err as Error).message}`;
    return { file: "sh", args: ["-c", 'echo "$1" >&2; exit 1', "sh", why], env: launch.engine.env };
  }
  const create = [
    "create",
    "--rm",
    "--init",
    "--name",
    launch.name,
    "--label",
    `${DEPLOYMENT_LABEL}=${launch.deploymentId}`,
    "--label",
    `${REVISION_LABEL}=${launch.revisionId}`,
    "--label",
    `${OWNER_LABEL}=${launch.owner}`,
    "--env-file",
    envFile,
    "--stop-timeout",
    String(launch.stopTimeoutS),
  ];
  for (const name of Object.keys(byName)) create.push("-e", name);
  if (launch.network === "host") create.push("--network", "host");
  else create.push("-p", `127.0.0.1:${hostPort}:${CONTAINER_PORT}`);
  if (launch.memoryLimitMb !== undefined) create.push("--memory", `${launch.memoryLimitMb}m`);
  if (launch.cpus !== undefined) create.push("--cpus", String(launch.cpus));
  create.push("--", launch.image);
  return {
    file: "sh",
    args: ["-c", CREATE_THEN_START, "sh", envFile, launch.name, launch.engine.name, ...create],
    env: { ...launch.engine.env, ...byName },
  };
}

/** Stops a replica's container (SIGTERM, SIGKILL after its stop timeout) and removes it. */
export async function stopContainer(launch: ContainerLaunch): Promise<void> {
  const { engine, name } = launch;
  await execEngine(engine, ["stop", "--time", String(launch.stopTimeoutS), "--", name], 60_000);
  await execEngine(engine, ["rm", "--force", "--", name], 60_000);
}

/** Removes this Slipway's containers of a deployment (teardown, and leftovers of a killed Slipway). */
export async function removeDeploymentContainers(
  engine: Engine,
  owner: string,
  deploymentId: string,
): Promise<number> {
  const listed = await execEngine(engine, [
    "ps",
    "--all",
    "--quiet",
    "--filter",
    `label=${DEPLOYMENT_LABEL}=${deploymentId}`,
    "--filter",
    `label=${OWNER_LABEL}=${owner}`,
  ]);
  const ids = listed.ok ? listed.stdout.split(/\s+/).filter(Boolean) : [];
  if (ids.length > 0) await execEngine(engine, ["rm", "--force", "--", ...ids], 60_000);
  return ids.length;
}
