import type { DeploymentType } from "../../interface.ts";

/**
 * What `deployment_type` means on this machine: the defaults a revision's resource_spec does not
 * override (README "Deployment types" lists this table). `prod` also has a floor of two API
 * processes, so that a crash of one (or a deploy) never leaves it without a process.
 */
export const DEPLOYMENT_TYPE_DEFAULTS: Readonly<
  Record<
    DeploymentType,
    { minScale: number; maxScale: number; memoryLimitMb: number | undefined; floor: number }
  >
> = {
  dev_free: { minScale: 0, maxScale: 1, memoryLimitMb: 256, floor: 0 },
  dev: { minScale: 1, maxScale: 1, memoryLimitMb: undefined, floor: 0 },
  prod: { minScale: 2, maxScale: 4, memoryLimitMb: undefined, floor: 2 },
};

/** The scale of the two process types, and their memory and cpu limits, after defaults and bounds. */
export interface ScalePlan {
  web: { min: number; max: number };
  /** Queue workers: never fewer than one (they are not scaled to zero). */
  queue: { min: number; max: number };
  /** API processes' memory limit (MB). */
  memoryLimitMb: number | undefined;
  /** Queue workers' memory limit (MB): `queue_memory_limit_mb`, else the API processes'. */
  queueMemoryLimitMb: number | undefined;
  /** Cores per API process as asked (`cpu_limit`, else `cpu`); the machine's cores bound it later. */
  cpus: number | undefined;
  /** Cores per queue worker: `queue_cpu_limit`, else `queue_cpu`, else the API processes'. */
  queueCpus: number | undefined;
}

function wholeAtLeast(value: unknown, least: number): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= least ? value : undefined;
}

const positive = (value: unknown) => (typeof value === "number" && value > 0 ? value : undefined);

/**
 * Resolves `min_scale`, `max_scale`, `queue_min_scale`, `queue_max_scale` and the memory and cpu
 * limits of both types from the spec over the type's defaults; as in the hosted service, every
 * `queue_*` field not set takes the API processes' value. Every value that is adjusted gets a log
 * line saying why.
 * `machineMax` bounds every count (one machine, many apps).
 */
export function planScale(
  spec: Record<string, unknown>,
  type: DeploymentType,
  machineMax: number,
  log: (line: string) => void,
): ScalePlan {
  const d = DEPLOYMENT_TYPE_DEFAULTS[type];
  const read = (field: string, least: number, fallback: number): number => {
    const raw = spec[field];
    if (raw === undefined || raw === null) return fallback;
    const value = wholeAtLeast(raw, least);
    if (value === undefined) {
      log(`slipway: ${field} ${JSON.stringify(raw)} is not a whole number ≥ ${least}; using ${fallback}`);
      return fallback;
    }
    return value;
  };
  const bound = (field: string, n: number): number => {
    if (n <= machineMax) return n;
    log(`slipway: ${field} ${n} is above this machine's limit of ${machineMax}; using ${machineMax}`);
    return machineMax;
  };
  let min = bound("min_scale", read("min_scale", 0, d.minScale));
  if (min < d.floor) {
    log(`slipway: deployment_type ${type} runs at least ${d.floor} API processes; min_scale ${min} raised`);
    min = d.floor;
  }
  let max = bound("max_scale", read("max_scale", 1, Math.max(d.maxScale, min)));
  if (max < Math.max(min, 1)) {
    log(`slipway: max_scale ${max} is below min_scale ${min}; using ${Math.max(min, 1)}`);
    max = Math.max(min, 1);
  }
  const queueMin = Math.max(1, bound("queue_min_scale", read("queue_min_scale", 0, min)));
  const queueMax = Math.max(queueMin, bound("queue_max_scale", read("queue_max_scale", 1, max)));
  const memoryLimitMb = wholeAtLeast(spec.memory_limit_mb ?? d.memoryLimitMb, 1);
  const cpus = positive(spec.cpu_limit) ?? positive(spec.cpu);
  return {
    web: { min, max },
    queue: { min: queueMin, max: queueMax },
    memoryLimitMb,
    queueMemoryLimitMb: wholeAtLeast(spec.queue_memory_limit_mb, 1) ?? memoryLimitMb,
    cpus,
    queueCpus: positive(spec.queue_cpu_limit) ?? positive(spec.queue_cpu) ?? cpus,
  };
}
