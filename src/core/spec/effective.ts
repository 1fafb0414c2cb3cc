// The effective spec both runtimes read: a revision's stored spec with every default applied once,
// here: the limits of requests (stored.ts), `deployment_type`'s scale and memory limit, and the
// queue workers' fallbacks to the API processes' values.
import { Value } from "@sinclair/typebox/value";
import { FIELD_DEFS, type SpecValues } from "./fields.ts";
import { normalizedSpec } from "./stored.ts";

interface TypeDefaults {
  minScale: number;
  maxScale: number;
  memoryLimitMb: number | undefined;
  /** The fewest API processes whatever the spec says. */
  floor: number;
}

/**
 * What `deployment_type` means: the defaults a revision's resource_spec does not override
 * (docs/resource-spec.md "Deployment types" lists this table). `prod` also has a floor of two API
 * processes, so that a crash of one (or a deploy) never leaves it without a process.
 */
export const DEPLOYMENT_TYPE_DEFAULTS = {
  dev_free: { minScale: 0, maxScale: 1, memoryLimitMb: 256, floor: 0 },
  dev: { minScale: 1, maxScale: 1, memoryLimitMb: undefined, floor: 0 },
  prod: { minScale: 2, maxScale: 4, memoryLimitMb: undefined, floor: 2 },
} as const satisfies Record<string, TypeDefaults>;

/** The deployment types this table knows (core/deployments/model.ts's, checked by a test). */
export type SpecDeploymentType = keyof typeof DEPLOYMENT_TYPE_DEFAULTS;

export interface Scale {
  min: number;
  max: number;
}

export interface EffectiveSpec {
  /**
   * The spec's valid fields with every default written in: limits from requests, the four scales,
   * `memory_limit_mb` from the type, and the `queue_*` requests and limits the API processes have.
   */
  fields: SpecValues;
  /** API processes. */
  web: Scale;
  /** Queue workers: never fewer than one (they are not scaled to zero). */
  queue: Scale;
  /** API processes' memory limit (MB). */
  memoryLimitMb: number | undefined;
  /** Queue workers' memory limit (MB): `queue_memory_limit_mb`, else the API processes'. */
  queueMemoryLimitMb: number | undefined;
  /** Cores per API process as asked (`cpu_limit`, else `cpu`); a machine's cores may bound it later. */
  cpus: number | undefined;
  /** Cores per queue worker: `queue_cpu_limit`, else `queue_cpu`, else the API processes'. */
  queueCpus: number | undefined;
  /** The optional parts the stored spec asks for: any of their fields above 0 (before defaults). */
  asks: { queue: boolean; database: boolean; cache: boolean };
}

export interface ResolveOptions {
  /** Bounds every count (one machine, many apps); none: unbounded. */
  maxCount?: number;
  /** Told why each value that is adjusted is (the local runtime's deploy log). */
  log?: (line: string) => void;
}

function wholeAtLeast(value: unknown, least: number): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= least ? value : undefined;
}

const positive = (value: unknown) => (typeof value === "number" && value > 0 ? value : undefined);

/** True when any `<prefix>*` field of the spec is a positive number: that part was asked for. */
function asksFor(spec: Record<string, unknown>, prefix: string): boolean {
  return Object.entries(spec).some(([k, v]) => k.startsWith(prefix) && typeof v === "number" && v > 0);
}

/** The fields whose values fit their API schema; anything else in a stored spec is left out. */
function validFields(spec: Record<string, unknown>): SpecValues {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(spec)) {
    const def = FIELD_DEFS[name];
    if (def !== undefined && value !== null && Value.Check(def.schema, value)) out[name] = value;
  }
  // Each value was checked against its field's schema just above.
  return out as SpecValues;
}

/** `type`'s defaults; an unknown type (a newer server's) is treated as `dev`, as the API defaults it. */
function defaultsOf(type: string | undefined): TypeDefaults & { name: string } {
  const table: Readonly<Record<string, TypeDefaults>> = DEPLOYMENT_TYPE_DEFAULTS;
  const own = type !== undefined && Object.hasOwn(table, type) ? table[type] : undefined;
  return own !== undefined && type !== undefined
    ? { ...own, name: type }
    : { ...DEPLOYMENT_TYPE_DEFAULTS.dev, name: "dev" };
}

/**
 * Resolves the spec a runtime acts on from a revision's stored spec and its deployment type:
 * `min_scale`, `max_scale`, `queue_min_scale`, `queue_max_scale` and the memory and cpu limits of
 * both process types over the type's defaults; as in the hosted service, every `queue_*` field
 * not set takes the API processes' value. Every value that is adjusted gets a log line saying why.
 */
export function effectiveSpec(
  stored: Record<string, unknown> | null,
  type: string | undefined,
  o: ResolveOptions = {},
): EffectiveSpec {
  const spec = normalizedSpec(stored ?? {});
  const d = defaultsOf(type);
  const log = o.log ?? (() => {});
  const maxCount = o.maxCount ?? Number.POSITIVE_INFINITY;
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
    if (n <= maxCount) return n;
    log(`slipway: ${field} ${n} is above this machine's limit of ${maxCount}; using ${maxCount}`);
    return maxCount;
  };
  let min = bound("min_scale", read("min_scale", 0, d.minScale));
  if (min < d.floor) {
    log(`slipway: deployment_type ${d.name} runs at least ${d.floor} API processes; min_scale ${min} raised`);
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
  const queueMemoryLimitMb = wholeAtLeast(spec.queue_memory_limit_mb, 1) ?? memoryLimitMb;
  const cpus = positive(spec.cpu_limit) ?? positive(spec.cpu);
  const queueCpus = positive(spec.queue_cpu_limit) ?? positive(spec.queue_cpu) ?? cpus;
  const fields = validFields(spec);
  const effective: SpecValues = {
    ...fields,
    min_scale: min,
    max_scale: max,
    queue_min_scale: queueMin,
    queue_max_scale: queueMax,
  };
  if (memoryLimitMb !== undefined) effective.memory_limit_mb = memoryLimitMb;
  if (queueMemoryLimitMb !== undefined) effective.queue_memory_limit_mb = queueMemoryLimitMb;
  if (queueCpus !== undefined) effective.queue_cpu_limit = queueCpus;
  const queueCpu = fields.queue_cpu ?? fields.cpu;
  if (queueCpu !== undefined) effective.queue_cpu = queueCpu;
  const queueMemory = fields.queue_memory_mb ?? fields.memory_mb;
  if (queueMemory !== undefined) effective.queue_memory_mb = queueMemory;
  return {
    fields: effective,
    web: { min, max },
    queue: { min: queueMin, max: queueMax },
    memoryLimitMb,
    queueMemoryLimitMb,
    cpus,
    queueCpus,
    asks: { queue: asksFor(spec, "queue_"), database: asksFor(spec, "db_"), cache: asksFor(spec, "redis_") },
  };
}
