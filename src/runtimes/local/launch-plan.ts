import { availableParallelism } from "node:os";
import { type EffectiveSpec, effectiveSpec } from "../../core/spec/effective.ts";
import type { BuildRecord } from "../build/app-config.ts";
import { noEngineMessage } from "../build/image-source.ts";
import type { EngineFinder } from "../engine/finder.ts";
import type { RevisionSpec } from "../interface.ts";
import type { Layout } from "../shared/layout.ts";
import type { ContainerNetwork } from "./containers/container.ts";
import { containerLaunches } from "./containers/container.ts";
import { cpuCgroupSupported } from "./processes/cpu-cgroup.ts";
import type { Launch } from "./processes/replica.ts";
import { UNSANDBOXED_WARNING } from "./protections/refusals.ts";
import { unenforcedWarnings } from "./resource-fields.ts";
import type { Confiner, EgressPolicy } from "./sandbox/confine.ts";

/**
 * What an activation starts, decided from the build record and the revision's resource_spec: how
 * many replicas, their environment, and how each is launched (a process in its sandbox, or a
 * container). Starting them, and the switch, stay in runtime.ts.
 */

export interface LaunchPlan {
  scale: EffectiveSpec;
  /** The queue workers' command; none: no queue workers run. */
  worker: string | undefined;
  /** The replicas' environment without PORT (set per start). */
  env: Record<string, string>;
  /** How the `index`th API process or queue worker is launched. */
  launch: (type: "api" | "queue", index: number) => Launch;
}

export interface PlanInput {
  spec: RevisionSpec;
  built: BuildRecord;
  layout: Layout;
  confiner: Confiner;
  containers: EngineFinder;
  network: ContainerNetwork;
  /** SLIPWAY_APP_EGRESS and SLIPWAY_APP_EGRESS_ALLOW: containers' firewall applies them (default: internet). */
  egress?: EgressPolicy;
  /** Upper bound on replicas (LocalRuntimeOptions.maxScale). */
  maxScale: number;
  stopGraceMs: number;
  log: (line: string) => void;
  /** Logs the reason and throws the DeployError that fails the activation. */
  fail: (message: string) => never;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : word.endsWith("s") ? "es" : "s"}`;

/** A cpu limit (core/spec/effective.ts resolves which field) at most this machine's cores. */
function boundCpus(asked: number | undefined, log: (line: string) => void): number | undefined {
  if (asked === undefined) return undefined;
  const cores = availableParallelism();
  if (asked <= cores) return asked;
  log(
    `slipway: cpu limit ${asked} is above this machine's ${cores} cores; limiting each process to ${cores}`,
  );
  return cores;
}

/** NODE_OPTIONS capping Node's heap below a memory limit of `memoryMb` (over the app's own). */
function heapCapped(nodeOptions: string | undefined, memoryMb: number): { heapMb: number; value: string } {
  // Node sizes its heap from the machine, not from rlimits: cap it so it fails with a clear
  // "heap out of memory" before the data limit turns allocations into crashes.
  const heapMb = Math.max(16, Math.floor(memoryMb * 0.75));
  return { heapMb, value: [nodeOptions, `--max-old-space-size=${heapMb}`].filter(Boolean).join(" ") };
}

export async function planLaunch(p: PlanInput): Promise<LaunchPlan> {
  const { spec, built, log } = p;
  const type = spec.deploymentType ?? "dev";
  const scale = effectiveSpec(spec.resourceSpec, type, { maxCount: p.maxScale, log });
  const resources = { ...(spec.resourceSpec ?? {}), memory_limit_mb: scale.memoryLimitMb };
  const web = scale.web.min === scale.web.max ? `${scale.web.min}` : `${scale.web.min} to ${scale.web.max}`;
  const zero = scale.web.min === 0 ? " (none while idle)" : "";
  const cpuCgroup = await cpuCgroupSupported();
  const situation = { image: built.kind === "image", cpuCgroup, appDatabase: "DATABASE_URI" in spec.env };
  for (const warning of unenforcedWarnings(spec.resourceSpec, situation)) log(warning);
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
      egress: p.egress && { mode: p.egress.egress, allow: p.egress.egressAllow },
      envDir: p.layout.revisionDir(spec.deploymentId, spec.revisionId),
      resources,
      stopGraceMs: p.stopGraceMs,
      log,
    });
    log(`slipway: api: ${web} container(s)${zero} of ${built.ref ?? built.image} with ${engine.name}`);
    return {
      scale,
      worker: undefined,
      env: { ...built.env, ...spec.env },
      launch: (_type, index) => ({ kind: "container", ...container(index) }),
    };
  }

  // Static revisions never reach here: runtime.ts serves their files with no process.
  if (built.kind === "static") p.fail("a static revision has no processes to launch");
  const appDir = p.layout.appDir(spec.deploymentId, spec.revisionId);
  const confined = await p.confiner.confine(spec.deploymentId, appDir, false);
  if (!confined.sandboxed) log(UNSANDBOXED_WARNING);
  const env = await p.confiner.gateDatabase(spec.deploymentId, {
    ...confined.env,
    ...built.env,
    ...spec.env,
  });
  /** Each type with its own limits (queue_* over the API's: core/spec/effective.ts), logged once. */
  const launchOf = (kind: "api" | "queue", command: string): Launch => {
    const memoryMb = kind === "api" ? scale.memoryLimitMb : scale.queueMemoryLimitMb;
    const cpus = cpuCgroup ? boundCpus(kind === "api" ? scale.cpus : scale.queueCpus, log) : undefined;
    const name = kind === "api" ? "API process" : "queue worker";
    const heap = memoryMb === undefined ? undefined : heapCapped(env.NODE_OPTIONS, memoryMb);
    if (heap !== undefined) {
      log(
        `slipway: memory limit ${memoryMb} MB per ${name} (data segment limit; Node heap ${heap.heapMb} MB)`,
      );
    }
    if (cpus !== undefined) log(`slipway: cpu limit ${cpus} per ${name} (cgroup cpu controller)`);
    return {
      kind: "process",
      command,
      wrap: confined.wrap,
      env: heap === undefined ? {} : { NODE_OPTIONS: heap.value },
      dataLimitBytes: memoryMb === undefined ? undefined : memoryMb * 1024 * 1024,
      cpus,
      host: confined.network?.address,
    };
  };
  const api = launchOf("api", built.start);
  const queue = built.worker === undefined ? api : launchOf("queue", built.worker);
  log(`slipway: api: ${web} process(es)${zero}, deployment_type ${type}: ${built.start}`);
  if (built.worker !== undefined) {
    const q = scale.queue;
    const range = q.min === q.max ? plural(q.min, "process") : `${q.min} to ${q.max} processes`;
    log(`slipway: queue: ${range} (scaled on cpu, never to zero): ${built.worker}`);
  }
  return { scale, worker: built.worker, env, launch: (kind) => (kind === "api" ? api : queue) };
}
