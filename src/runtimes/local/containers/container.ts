import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { type Engine, execEngine } from "../../engine/engine.ts";
import {
  type ContainerEgress,
  deploymentNetwork,
  firewallRules,
  firewallTable,
  hardeningFlags,
  NETWORK_UP,
  networkInUse,
  networkOptions,
  networkReleased,
  removeNetwork,
  resolversOf,
} from "./container-isolation.ts";
import { writeEnvFile } from "./env-file.ts";

/**
 * Image revisions as replicas. A replica's process is `<engine> create … && <engine> start
 * --attach <name>` (one small shell), so the replica code supervises a container exactly like an
 * app process: its output is the log, its exit is the crash, ending its group ends the CLI.
 * Containers are labelled so teardown and the next Slipway find them after a SIGKILL. On a bridge,
 * each deployment has a network of its own, guarded by a firewall (container-isolation.ts).
 */

/** `bridge`: a private network with the app's port published on loopback; `host`: the host's network. */
export type ContainerNetwork = "bridge" | "host";

/** Port the app listens on inside its container on a bridge network (given to it as PORT). */
export const CONTAINER_PORT = 8080;

export const DEPLOYMENT_LABEL = "slipway.deployment";
export const REVISION_LABEL = "slipway.revision";
/** Names the data dir (hashed): teardown and leftovers only ever touch this Slipway's containers. */
export const OWNER_LABEL = "slipway.owner";

/** One container replica, as `Launch` of kind "container" in processes/replica.ts carries it. */
export interface ContainerLaunch {
  engine: Engine;
  /** The image id from the build record. */
  image: string;
  name: string;
  deploymentId: string;
  revisionId: string;
  owner: string;
  network: ContainerNetwork;
  /** What the container may connect to beyond its own network (bridge only). */
  egress: ContainerEgress;
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
  /** SLIPWAY_APP_EGRESS and SLIPWAY_APP_EGRESS_ALLOW (default: the internet, no private range). */
  egress?: { mode: "internet" | "none"; allow: string[] };
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
  const egress: ContainerEgress = {
    mode: s.egress?.mode ?? "internet",
    allow: s.egress?.allow ?? [],
    resolvers: systemResolvers(),
  };
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
    egress,
    envDir: s.envDir,
    memoryLimitMb: memoryLimitMb === undefined ? undefined : Math.floor(memoryLimitMb),
    cpus,
    stopTimeoutS: Math.max(1, Math.ceil(s.stopGraceMs / 1000)),
  });
}

/** The resolvers containers are given (the host's, which podman copies): reachable on port 53. */
function systemResolvers(): string[] {
  try {
    return resolversOf(readFileSync("/etc/resolv.conf", "utf8"));
  } catch {
    return [];
  }
}

/** The PORT a container app is given: its own port on a bridge, the published one on the host's network. */
export function appPort(launch: ContainerLaunch, hostPort: number): number {
  return launch.network === "host" ? hostPort : CONTAINER_PORT;
}

/** Engine commands are not free: while a container is not running yet, its pid is asked this often. */
const PID_RETRY_MS = 1000;

/**
 * The host pid of a replica's container once it runs (the engine's `inspect`), remembered once
 * known; undefined before. What processes/port-check.ts reads the container's listening sockets from.
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

/** Seconds a container create may take before it is killed and tried once more. */
const CREATE_TIMEOUT_S = 60;
/** Machine-wide: every Slipway (and every test server) on the machine shares the engine's storage. */
const CREATE_LOCK = join(tmpdir(), "slipway-container-create.lock");

/**
 * Makes sure the deployment's network and firewall are up (bridge), removes the env file whatever
 * `create` did, then runs the container attached, so the CLI's exit is the container's. A `create`
 * that lost its network to the removal beside the previous container's stop is tried once more.
 * The file's path, the container's name and the firewall rules are the only data on any argv.
 *
 * Creates run one at a time on the machine (an flock on CREATE_LOCK) and are killed after
 * CREATE_TIMEOUT_S, then tried once more: podman 4.3 (Debian bookworm) can deadlock for good in a
 * `create --userns=auto` while another podman writes its storage (container-isolation.ts says
 * which path, and gives the size that avoids it); a killed process releases its file locks.
 */
const CREATE_THEN_START = `f=$1; n=$2; engine=$3; net=$4; net_opts=$5; iface_format=$6; rules=$7
owner_label=$8; deployment_label=$9; lock=\${10}; shift 10
${NETWORK_UP}
create() { flock "$lock" timeout -s KILL ${CREATE_TIMEOUT_S} "$@" >/dev/null; }
if [ -n "$net" ] && ! net_up; then rm -f -- "$f"; exit 1; fi
create "$@"; rc=$?
if [ "$rc" -eq 137 ]; then
  echo "slipway: $engine create did not finish in ${CREATE_TIMEOUT_S} s: trying once more" >&2
  "$engine" rm --force -- "$n" >/dev/null 2>&1
  create "$@"; rc=$?
elif [ "$rc" -ne 0 ] && [ -n "$net" ] && ! "$engine" network inspect "$net" >/dev/null 2>&1; then
  net_up && { create "$@"; rc=$?; }
fi
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
  const bridge = launch.network !== "host";
  const network = bridge ? deploymentNetwork(launch.owner, launch.deploymentId) : "";
  // Counted before anything can fail: every start is followed by a stopContainer.
  if (bridge) networkInUse(network);
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
    ...hardeningFlags(launch.engine, !bridge),
  ];
  for (const name of Object.keys(byName)) create.push("-e", name);
  if (bridge) create.push("--network", network, "-p", `127.0.0.1:${hostPort}:${CONTAINER_PORT}`);
  else create.push("--network", "host");
  if (launch.memoryLimitMb !== undefined) create.push("--memory", `${launch.memoryLimitMb}m`);
  if (launch.cpus !== undefined) create.push("--cpus", String(launch.cpus));
  create.push("--", launch.image);
  const options = networkOptions(launch.engine);
  const rules =
    bridge && launch.engine.isolation?.firewall ? firewallRules(firewallTable(network), launch.egress) : "";
  const prelude = [
    envFile,
    launch.name,
    launch.engine.name,
    network,
    options.create,
    options.iface,
    rules,
    `${OWNER_LABEL}=${launch.owner}`,
    `${DEPLOYMENT_LABEL}=${launch.deploymentId}`,
    CREATE_LOCK,
  ];
  return {
    file: "sh",
    args: ["-c", CREATE_THEN_START, "sh", ...prelude, launch.engine.name, ...create],
    env: { ...launch.engine.env, ...byName },
  };
}

/**
 * Stops a replica's container (SIGTERM, SIGKILL after its stop timeout) and removes it; the
 * deployment's network and firewall go with its last container.
 */
export async function stopContainer(launch: ContainerLaunch): Promise<void> {
  const { engine, name } = launch;
  await execEngine(engine, ["stop", "--time", String(launch.stopTimeoutS), "--", name], 60_000);
  await execEngine(engine, ["rm", "--force", "--", name], 60_000);
  if (launch.network !== "host") {
    await networkReleased(engine, deploymentNetwork(launch.owner, launch.deploymentId));
  }
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
  await removeNetwork(engine, deploymentNetwork(owner, deploymentId));
  return ids.length;
}
