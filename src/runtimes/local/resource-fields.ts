/**
 * What the local runtime does with each field of `resource_spec`: the one place that decides which
 * fields are enforced on this machine. Activation logs a warning for every set field it does not
 * enforce here (README "Resources on one machine" lists the same, field by field).
 */

/** What an activation knows of where it runs, for the fields enforced only in some places. */
export interface Situation {
  /** An image revision (its container engine enforces `--cpus` and `--memory`). */
  image: boolean;
  /** The kernel's cpu controller is writable here (cgroup.ts `cpuCgroupSupport`). */
  cpuCgroup: boolean;
  /** The deployment has its own PostgreSQL database (SLIPWAY_APPS_DATABASE_URL). */
  appDatabase: boolean;
}

export type Handling =
  /** Acted on wherever the runtime runs. */
  | "enforced"
  /** Acted on where `when` holds; otherwise warned about like "not enforced". */
  | "where possible"
  /** A request: it only sets the default of its limit (the API fills it in), nothing to reserve. */
  | "default"
  /** Stored and returned, but nothing on one machine acts on it. */
  | "not enforced";

export interface FieldRule {
  handling: Handling;
  /** Why it is not enforced (in the warning line), or how it is. */
  why: string;
  when?: (s: Situation) => boolean;
}

const cpuWhen = (s: Situation) => s.image || s.cpuCgroup;
const dbWhen = (s: Situation) => s.appDatabase;
const NO_ORCHESTRATOR = "the hosted service's orchestrator is not part of the local runtime";
const NO_EXECUTOR = "the hosted service's executor is not part of the local runtime";
const SHARED_DB = "the apps' PostgreSQL server is shared; its cpu and memory are the server's own settings";
const K8S = "a Kubernetes setting; the local runtime runs no pods";

export const RESOURCE_FIELDS: Readonly<Record<string, FieldRule>> = {
  min_scale: { handling: "enforced", why: "the fewest API processes (0: none while idle); at most 8" },
  max_scale: { handling: "enforced", why: "the most API processes the autoscaler starts; at most 8" },
  cpu: { handling: "default", why: "a request; its default limit is cpu_limit" },
  cpu_limit: {
    handling: "where possible",
    why: "the kernel's cpu controller is not writable here, so processes share the machine's cpu",
    when: cpuWhen,
  },
  memory_mb: { handling: "default", why: "a request; its default limit is memory_limit_mb" },
  memory_limit_mb: { handling: "enforced", why: "data-segment rlimit and a memory cgroup per process" },
  queue_min_scale: {
    handling: "enforced",
    why: "the fewest queue workers (app config `worker`); at least 1",
  },
  queue_max_scale: { handling: "enforced", why: "the most queue workers, scaled on their cpu; at most 8" },
  queue_cpu: { handling: "default", why: "a request; its default limit is queue_cpu_limit" },
  queue_cpu_limit: {
    handling: "where possible",
    why: "the kernel's cpu controller is not writable here, so queue workers share the machine's cpu",
    // Image revisions have no queue workers, so only the cgroup matters.
    when: (s) => s.cpuCgroup,
  },
  queue_memory_mb: { handling: "default", why: "a request; its default limit is queue_memory_limit_mb" },
  queue_memory_limit_mb: {
    handling: "enforced",
    why: "data-segment rlimit and a memory cgroup per queue worker",
  },
  orchestrator_cpu: { handling: "not enforced", why: NO_ORCHESTRATOR },
  orchestrator_cpu_limit: { handling: "not enforced", why: NO_ORCHESTRATOR },
  orchestrator_memory_mb: { handling: "not enforced", why: NO_ORCHESTRATOR },
  orchestrator_memory_limit_mb: { handling: "not enforced", why: NO_ORCHESTRATOR },
  orchestrator_min_scale: { handling: "not enforced", why: NO_ORCHESTRATOR },
  orchestrator_max_scale: { handling: "not enforced", why: NO_ORCHESTRATOR },
  executor_cpu: { handling: "not enforced", why: NO_EXECUTOR },
  executor_cpu_limit: { handling: "not enforced", why: NO_EXECUTOR },
  executor_memory_mb: { handling: "not enforced", why: NO_EXECUTOR },
  executor_memory_limit_mb: { handling: "not enforced", why: NO_EXECUTOR },
  redis_cpu: { handling: "default", why: "a request; its default limit is redis_cpu_limit" },
  redis_cpu_limit: {
    handling: "where possible",
    why: "the kernel's cpu controller is not writable here, so Redis shares the machine's cpu",
    when: (s) => s.cpuCgroup,
  },
  redis_memory_mb: { handling: "default", why: "a request; its default limit is redis_memory_limit_mb" },
  redis_memory_limit_mb: { handling: "enforced", why: "Redis `maxmemory`" },
  db_cpu: { handling: "not enforced", why: SHARED_DB },
  db_cpu_limit: { handling: "not enforced", why: SHARED_DB },
  db_memory_mb: { handling: "not enforced", why: SHARED_DB },
  db_memory_limit_mb: { handling: "not enforced", why: SHARED_DB },
  db_storage_gi: {
    handling: "where possible",
    why: "this machine gives apps no database (SLIPWAY_APPS_DATABASE_URL is unset)",
    when: dbWhen,
  },
  db_max_connections: {
    handling: "where possible",
    why: "this machine gives apps no database (SLIPWAY_APPS_DATABASE_URL is unset)",
    when: dbWhen,
  },
  labels: { handling: "not enforced", why: K8S },
  annotations: { handling: "not enforced", why: K8S },
  service_account_name: { handling: "not enforced", why: K8S },
  image_pull_secrets: {
    handling: "not enforced",
    why: "images are pulled with the engine's own credentials of the Slipway user",
  },
  volumes: { handling: "not enforced", why: K8S },
  volume_mounts: { handling: "not enforced", why: K8S },
  init_containers: { handling: "not enforced", why: K8S },
  sidecars: { handling: "not enforced", why: K8S },
};

/** Whether `field` is acted on here. Unknown fields never are. */
export function enforcedHere(field: string, s: Situation): boolean {
  const rule = RESOURCE_FIELDS[field];
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
    const why = RESOURCE_FIELDS[field]?.why ?? "not a field this runtime knows";
    out.push(`slipway: warning: resource_spec.${field} is not enforced locally: ${why}`);
  }
  return out;
}
