// A resource spec as the hosted service stores it: the bounded cpu fields rounded to 0.1, and each
// limit that is not given defaulting to its request times a factor (both declared in fields.ts).
// Bounds are checked by the request schema (422 naming the field) before this runs.
import { FIELD_DEFS } from "./fields.ts";

type Spec = Record<string, unknown>;

/** request → its limit and the limit's default factor. */
const LIMIT_DEFAULTS = Object.entries(FIELD_DEFS).flatMap(([request, def]) =>
  def.limit ? [[request, def.limit.field, def.limit.factor] as const] : [],
);
const ROUNDED = new Set(Object.keys(FIELD_DEFS).filter((name) => FIELD_DEFS[name]?.rounded));
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

/**
 * A spec's stored form: rounded, limits defaulted. It changes nothing in a spec the API stored,
 * so the runtimes may apply it again to whatever spec they are handed (effective.ts).
 */
export function normalizedSpec(spec: Spec): Spec {
  return withDefaultLimits(rounded(spec));
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
  return normalizedSpec({ ...merged, ...sent });
}
