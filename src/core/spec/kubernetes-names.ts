// The Kubernetes API server's own rules (apimachinery's validation: DNS-1123 labels, qualified
// names, label values; requests not above limits) for what a deployment on a listener becomes:
// checked at the API so a spec the cluster would refuse with 422 is refused here first, naming
// the field. Local deployments are not checked (they accept what they always have).
import type { FieldProblem } from "../errors.ts";

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A DNS-1123 subdomain: dot-separated DNS labels, at most 253 characters. */
export function isDnsSubdomain(v: string): boolean {
  return v.length > 0 && v.length <= 253 && v.split(".").every((p) => p.length <= 63 && DNS_LABEL.test(p));
}

/** A DNS-1123 label: at most 63 lowercase letters, digits or '-', alphanumeric at both ends. */
export const isDnsLabel = (v: string) => v.length <= 63 && DNS_LABEL.test(v);

/** Why `key` is not a qualified name (`[prefix/]name`), as label and annotation keys must be. */
export function qualifiedNameProblem(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2) return "Must be a qualified name: at most one '/'.";
  const name = parts.at(-1) ?? "";
  const prefix = parts.length === 2 ? parts[0] : undefined;
  if (prefix !== undefined && !isDnsSubdomain(prefix))
    return "Its prefix (before '/') must be a lowercase DNS subdomain of at most 253 characters.";
  if (name.length === 0 || name.length > 63 || !LABEL_NAME.test(name))
    return "Its name (after any '/') must be 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit.";
  return undefined;
}

/** Why `value` is not a label value (at most 63 characters, empty or alphanumeric at both ends). */
export function labelValueProblem(value: string): string | undefined {
  if (value === "") return undefined;
  if (value.length > 63 || !LABEL_NAME.test(value))
    return "A label value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit.";
  return undefined;
}

/** Total size of all annotations of an object (keys and values), as the API server bounds it. */
const ANNOTATIONS_MAX_BYTES = 256 * 1024;

const problem = (loc: (string | number)[], msg: string): FieldProblem => ({ loc, msg, type: "value_error" });

/** The request/limit pairs of a spec: a limit below its request is refused by the API server. */
const LIMIT_PAIRS: [string, string][] = [
  ["cpu", "cpu_limit"],
  ["memory_mb", "memory_limit_mb"],
  ["queue_cpu", "queue_cpu_limit"],
  ["queue_memory_mb", "queue_memory_limit_mb"],
  ["redis_cpu", "redis_cpu_limit"],
  ["redis_memory_mb", "redis_memory_limit_mb"],
  ["db_cpu", "db_cpu_limit"],
  ["db_memory_mb", "db_memory_limit_mb"],
];

export interface ListenerSpecContext {
  /** The deployment's name (a label value and a host's first label). */
  name?: string;
  /** The spec of the revision before, when there is one (`db_storage_gi` cannot shrink). */
  previous?: Record<string, unknown> | null;
}

/**
 * What the cluster would refuse in a deployment on a listener: its name (it becomes a label
 * value and a host), `labels` and `annotations` keys and values, limits below requests, and a
 * smaller `db_storage_gi` than the revision before (a volume claim cannot shrink).
 */
export function checkListenerSpec(spec: Record<string, unknown>, ctx: ListenerSpecContext): FieldProblem[] {
  const items: FieldProblem[] = [];
  const at = (...loc: (string | number)[]) => ["body", "source_config", "resource_spec", ...loc];
  if (ctx.name?.endsWith("-")) {
    items.push(
      problem(
        ["body", "name"],
        "On a listener the name becomes a label value and a host: it must end with a letter or digit.",
      ),
    );
  }
  const labels = spec.labels;
  if (typeof labels === "object" && labels !== null) {
    for (const [k, v] of Object.entries(labels)) {
      const keyProblem = qualifiedNameProblem(k);
      if (keyProblem) items.push(problem(at("labels", k), `Label key "${k}": ${keyProblem}`));
      const valueProblem = typeof v === "string" ? labelValueProblem(v) : undefined;
      if (valueProblem) items.push(problem(at("labels", k), valueProblem));
    }
  }
  const annotations = spec.annotations;
  if (typeof annotations === "object" && annotations !== null) {
    let bytes = 0;
    for (const [k, v] of Object.entries(annotations)) {
      const keyProblem = qualifiedNameProblem(k);
      if (keyProblem) items.push(problem(at("annotations", k), `Annotation key "${k}": ${keyProblem}`));
      bytes += Buffer.byteLength(k) + Buffer.byteLength(String(v));
    }
    if (bytes > ANNOTATIONS_MAX_BYTES)
      items.push(problem(at("annotations"), "Annotations may total at most 256 KiB (keys and values)."));
  }
  for (const [request, limit] of LIMIT_PAIRS) {
    const r = spec[request];
    const l = spec[limit];
    if (typeof r === "number" && typeof l === "number" && l > 0 && l < r) {
      items.push(
        problem(
          at(limit),
          `Must not be below ${request} (${r}): Kubernetes refuses a limit below its request.`,
        ),
      );
    }
  }
  const before = ctx.previous?.db_storage_gi;
  const now = spec.db_storage_gi;
  if (typeof before === "number" && typeof now === "number" && now < before) {
    items.push(
      problem(
        at("db_storage_gi"),
        `Must not be below the current ${before}: a volume claim can grow but never shrink.`,
      ),
    );
  }
  return items;
}
