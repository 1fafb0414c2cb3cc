// A resource spec as the hosted service stores it: the bounded cpu fields rounded to 0.1, and each
// limit that is not given defaulting to its request times a factor. Bounds are checked by the
// request schema (422 naming the field) before this runs.
import { RESOURCE_SPEC_CPU_BOUNDS } from "./schema.ts";

type Spec = Record<string, unknown>;

/** request → its limit and the limit's default factor (the cache's memory limit equals its request). */
const LIMIT_DEFAULTS: readonly [request: string, limit: string, factor: number][] = [
  ["cpu", "cpu_limit", 2],
  ["memory_mb", "memory_limit_mb", 2],
  ["queue_cpu", "queue_cpu_limit", 2],
  ["queue_memory_mb", "queue_memory_limit_mb", 2],
  ["redis_cpu", "redis_cpu_limit", 2],
  ["redis_memory_mb", "redis_memory_limit_mb", 1],
  ["db_cpu", "db_cpu_limit", 2],
  ["db_memory_mb", "db_memory_limit_mb", 2],
];

const ROUNDED = new Set(Object.keys(RESOURCE_SPEC_CPU_BOUNDS));
const tenth = (n: number) => Math.round(n * 10) / 10;

function rounded(spec: Spec): Spec {
  const out: Spec = { ...spec };
  for (const [k, v] of Object.entries(out)) if (ROUNDED.has(k) && typeof v === "number") out[k] = tenth(v);
  return out;
}

function withDefaultLimits(spec: Spec): Spec {
  const out: Spec = { ...spec };
  for (const [request, limit, factor] of LIMIT_DEFAULTS) {
    const value = out[request];
    if (typeof value !== "number" || out[limit] !== undefined) continue;
    const product = value * factor;
    out[limit] = ROUNDED.has(limit) ? tenth(product) : product;
  }
  return out;
}

/** The set keys of a request's resource_spec (null inside it means "not given"), or null if none. */
export function specOf(sent: Spec | null | undefined): Spec | null {
  if (!sent) return null;
  const kept = Object.entries(sent).filter(([, v]) => v !== null && v !== undefined);
  return kept.length === 0 ? null : Object.fromEntries(kept);
}

/**
 * The spec a new revision stores: `sent` (the set keys of the request, or null) over `base` (the
 * previous revision's). A request sent without its limit gets the default limit again rather than
 * keeping the old one, which may have been the default of the old request.
 */
export function resolveResourceSpec(sent: Spec | null, base: Spec | null): Spec | null {
  if (sent === null) return base;
  const merged: Spec = { ...(base ?? {}) };
  for (const [request, limit] of LIMIT_DEFAULTS) {
    if (sent[request] !== undefined && sent[limit] === undefined) delete merged[limit];
  }
  return withDefaultLimits(rounded({ ...merged, ...sent }));
}
