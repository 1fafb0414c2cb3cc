/**
 * What the local runtime does with each field of `resource_spec`, as the field registry declares
 * it (core/spec/fields.ts, `local`): activation logs a warning for every set field it does not
 * enforce here.
 */
import { FIELD_DEFS, type LocalSituation } from "../../core/spec/fields.ts";

export type Situation = LocalSituation;

/** Whether `field` is acted on here. Unknown fields never are. */
export function enforcedHere(field: string, s: Situation): boolean {
  const rule = FIELD_DEFS[field]?.local;
  if (rule === undefined) return false;
  if (rule.handling === "where possible") return rule.when?.(s) ?? false;
  return rule.handling !== "not enforced";
}

/** Whether a value counts as set (the API drops nulls; empty lists and objects ask for nothing). */
function isSet(value: unknown): boolean {
  if (value === null || value === undefined) return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
}

/** One deploy-log warning per set field of `spec` this machine does not act on, in spec order. */
export function unenforcedWarnings(spec: Record<string, unknown> | null, s: Situation): string[] {
  const out: string[] = [];
  for (const [field, value] of Object.entries(spec ?? {})) {
    if (!isSet(value) || enforcedHere(field, s)) continue;
    const why = FIELD_DEFS[field]?.local.why ?? "not a field this runtime knows";
    out.push(`slipway: warning: resource_spec.${field} is not enforced locally: ${why}`);
  }
  return out;
}
