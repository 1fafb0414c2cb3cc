import { availableParallelism } from "node:os";
import type { RevisionSpec } from "../interface.ts";
import type { BuildRecord } from "./app-config.ts";
import { type Confiner, UNSANDBOXED_WARNING } from "./confine.ts";
import { containerLaunches } from "./container.ts";
import type { ContainerNetwork, EngineFinder } from "./containers/engine.ts";
import { noEngineMessage } from "./containers/revision.ts";
import { cpuCgroupSupported } from "./cpu-cgroup.ts";
import type { Layout } from "./layout.ts";
import type { Launch } from "./replica.ts";
import { unenforcedWarnings } from "./resource-fields.ts";

/**
 * What an activation starts, decided from the build record and the revision's resource_spec: how
 * many replicas, their environment, and how each is launched (a process in its sandbox, or a
 * container). Starting them, and the switch, stay in runtime.ts.
 */

export interface LaunchPlan {
  scale: number;
  /** The replicas' environment without PORT (set per start). */
  env: Record<string, string>;
  launch: (index: number) => Launch;
}

export interface PlanInput {
  spec: RevisionSpec;
  built: BuildRecord;
  layout: Layout;
  confiner: Confiner;
  containers: EngineFinder;
  network: ContainerNetwork;
  /** Upper bound on replicas (LocalRuntimeOptions.maxScale). */
  maxScale: number;
  stopGraceMs: number;
  log: (line: string) => void;
  /** Logs the reason and throws the DeployError that fails the activation. */
  fail: (message: string) => never;
}

function positiveInt(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : undefined;
}

/** `min_scale` processes, 1 when it is not a positive whole number, at most the machine's limit. */
function scaleOf(requested: unknown, maxScale: number, log: (line: string) => void): number {
  let scale = positiveInt(requested) ?? 1;
  if (requested !== undefined && positiveInt(requested) === undefined) {
    log(`slipway: min_scale ${JSON.stringify(requested)} is not a positive whole number; running 1 process`);
  }
  if (scale > maxScale) {
    log(`slipway: min_scale ${scale} is above this machine's limit of ${maxScale}; running ${maxScale}`);
    scale = maxScale;
  }
  return scale;
}

/** `cpu_limit` (else `cpu`) of each process, at most this machine's cores; undefined when unset. */
function cpusOf(resources: Record<string, unknown>, log: (line: string) => void): number | undefined {
  const asked = [resources.cpu_limit, resources.cpu].find((v) => typeof v === "number" && v > 0);
  if (typeof asked !== "number") return undefined;
  const cores = availableParallelism();
  if (asked <= cores) return asked;
  log(
    `slipway: cpu limit ${asked} is above this machine's ${cores} cores; limiting each process to ${cores}`,
  );
  return cores;
}

export async function planLaunch(p: PlanInput): Promise<LaunchPlan> {
  const { spec, built, log } = p;
  const resources = spec.resourceSpec ?? {};
  const cpuCgroup = await cpuCgroupSupported();
  const situation = { image: built.kind === "image", cpuCgroup, appDatabase: "DATABASE_URI" in spec.env };
  for (const warning of unenforcedWarnings(spec.resourceSpec, situation)) log(warning);
  const scale = scaleOf(resources.min_scale, p.maxScale, log);
  if (built.kind === "image") {
    const engine = await p.containers.usable();
    if (engine === undefined) p.fail(noEngineMessage(p.containers));
    const container = containerLaunches({
      engine,
      image: built.image,
      deploymentId: spec.deploymentId,
      revisionId: spec.revisionId,
      owner: p.containers.owner,
      network: p.network,
      envDir: p.layout.revisionDir(spec.deploymentId, spec.revisionId),
      resources,
      stopGraceMs: p.stopGraceMs,
      log,
    });
    log(
      `slipway: running ${scale} container${scale === 1 ? "" : "s"} of ${built.ref ?? built.image} with ${engine.name}`,
    );
    return {
      scale,
      env: { ...built.env, ...spec.env },
      launch: (index) => ({ kind: "container", ...container(index) }),
    };
  }

  const memoryMb = positiveInt(resources.memory_limit_mb);
  const appDir = p.layout.appDir(spec.deploymentId, spec.revisionId);
  const confined = await p.confiner.confine(spec.deploymentId, appDir, false);
  if (!confined.sandboxed) log(UNSANDBOXED_WARNING);
  const env = { ...confined.env, ...built.env, ...spec.env };
  if (memoryMb !== undefined) {
    // Node sizes its heap from the machine, not from rlimits: cap it so it fails with a clear
    // "heap out of memory" before the data limit turns allocations into crashes.
    const heapMb = Math.max(16, Math.floor(memoryMb * 0.75));
    env.NODE_OPTIONS = [env.NODE_OPTIONS, `--max-old-space-size=${heapMb}`].filter(Boolean).join(" ");
    log(`slipway: memory limit ${memoryMb} MB per process (data segment limit; Node heap ${heapMb} MB)`);
  }
  const cpus = cpuCgroup ? cpusOf(resources, log) : undefined;
  if (cpus !== undefined) log(`slipway: cpu limit ${cpus} per process (cgroup cpu controller)`);
  log(`slipway: starting ${scale} process${scale === 1 ? "" : "es"}: ${built.start}`);
  return {
    scale,
    env,
    launch: () => ({
      kind: "process",
      command: built.start,
      wrap: confined.wrap,
      dataLimitBytes: memoryMb === undefined ? undefined : memoryMb * 1024 * 1024,
      cpus,
    }),
  };
}
