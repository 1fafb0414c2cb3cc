// What the API server does to every write before storing it, beyond the schema: defaulting (a
// field no manager owns any more is reset to its default, as after a server-side apply drops it)
// and the immutable fields of apps/v1 workloads. Refusals of rules.ts come back as 422s.
import { getAt, type Obj, same } from "./fields.ts";
import { apiServerRefusals } from "./rules.ts";

export class InvalidObject extends Error {}

/** Defaults the real server fills in that Slipway's behaviour depends on. */
export function applyDefaults(o: Obj): void {
  if (o.kind !== "Deployment" && o.kind !== "StatefulSet") return;
  const spec = (o.spec ?? {}) as Obj;
  if (spec.replicas === undefined) spec.replicas = 1;
  o.spec = spec;
}

/** StatefulSet fields an update may change (apps/v1 validation); the rest are immutable. */
const STATEFULSET_MUTABLE = new Set([
  "replicas",
  "ordinals",
  "template",
  "updateStrategy",
  "persistentVolumeClaimRetentionPolicy",
  "minReadySeconds",
]);

/** The refusal of an update of `prev` to `next`, in the API server's words; undefined when allowed. */
export function immutableChange(kind: string, name: string, next: Obj, prev: Obj): string | undefined {
  if (
    (kind === "Deployment" || kind === "StatefulSet") &&
    !same(getAt(next, ["spec", "selector"]), getAt(prev, ["spec", "selector"]))
  ) {
    return `${kind}.apps "${name}" is invalid: spec.selector: Invalid value: field is immutable`;
  }
  if (kind === "StatefulSet") {
    const a = (next.spec ?? {}) as Obj;
    const b = (prev.spec ?? {}) as Obj;
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      if (!STATEFULSET_MUTABLE.has(k) && !same(a[k], b[k])) {
        return `StatefulSet.apps "${name}" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden`;
      }
    }
  }
  if (kind === "PersistentVolumeClaim") {
    const want = getAt(next, ["spec", "resources", "requests", "storage"]);
    const had = getAt(prev, ["spec", "resources", "requests", "storage"]);
    if (!same(want, had) && !getAt(prev, ["metadata", "annotations", "standin/allow-volume-expansion"])) {
      return `persistentvolumeclaims "${name}" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`;
    }
  }
  return undefined;
}

/** Throws InvalidObject with the API server's message when `o` breaks one of its rules. */
export function checkRules(kind: string, name: string, o: Obj): void {
  const refusals = apiServerRefusals(o);
  if (refusals.length) throw new InvalidObject(`${kind} "${name}" is invalid: ${refusals.join(", ")}`);
}
