/**
 * Every field of `resource_spec`, declared once: its API schema (validation and /openapi.json),
 * what the local runtime does with it, and what the Kubernetes listener's objects get from it.
 * docs/resource-spec.md tabulates the same (test/core/spec/fields.test.ts compares them).
 */
import { type Static, type TOptional, type TSchema, type TUnsafe, Type } from "@sinclair/typebox";
import { Count as CountInt, OrNull } from "../shapes.ts";
import { Container, closed, PullSecret, Volume, VolumeMount } from "./pod-shapes.ts";

/** What an activation knows of where it runs, for the fields enforced only in some places. */
export interface LocalSituation {
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

/** The local runtime's handling of a field; `why` is the deploy log's reason when it is not acted on. */
export interface LocalEffect {
  handling: Handling;
  /** Why it is not enforced (in the warning line), or how it is. */
  why: string;
  when?: (s: LocalSituation) => boolean;
}

/** What the listener's manifests set from a field, or why they set nothing. */
export type KubernetesMapping = { sets: string } | { notMapped: string };

export interface FieldDef {
  /** The API's validation of the value (optional and nullable around it in ResourceSpec). */
  schema: TSchema;
  /** A request whose limit, when not given, defaults to the request times `factor`. */
  limit?: { field: string; factor: number };
  /** Stored rounded to 0.1 (the bounded cores). */
  rounded?: true;
  local: LocalEffect;
  kubernetes: KubernetesMapping;
}

const Cpu = Type.Number({ minimum: 0 });
const Count = CountInt();
/** The hosted service's bounds on the API, queue and cache cores, which are also rounded. */
const cores = (minimum: number, maximum: number) =>
  Type.Number({ minimum, maximum, description: `Cores, ${minimum}–${maximum}, rounded to 0.1.` });

const cpuWhen = (s: LocalSituation) => s.image || s.cpuCgroup;
const cgroupWhen = (s: LocalSituation) => s.cpuCgroup;
const dbWhen = (s: LocalSituation) => s.appDatabase;
const NO_ORCHESTRATOR = "the hosted service's orchestrator is not part of the local runtime";
const NO_EXECUTOR = "the hosted service's executor is not part of the local runtime";
const SHARED_DB = "the apps' PostgreSQL server is shared; its cpu and memory are the server's own settings";
const NO_DB = "this machine gives apps no database (SLIPWAY_APPS_DATABASE_URL is unset)";
const K8S = "a Kubernetes setting; the local runtime runs no pods";
const request = (limit: string) =>
  ({ handling: "default", why: `a request; its default limit is ${limit}` }) as const;
const cpuQuota = (who: string, when: (s: LocalSituation) => boolean): LocalEffect => ({
  handling: "where possible",
  why: `the kernel's cpu controller is not writable here, so ${who} the machine's cpu`,
  when,
});
const notLocal = (why: string): LocalEffect => ({ handling: "not enforced", why });
const sets = (what: string) => ({ sets: what });
const ORCHESTRATOR_K8S = {
  notMapped: "the hosted service's orchestrator has no part among the listener's objects",
};
const EXECUTOR_K8S = { notMapped: "the hosted service's executor has no part among the listener's objects" };
const QUEUE = "(any queue_* above 0 makes the queue workers' Deployment)";
const REDIS = "(any redis_* above 0 makes the Redis)";
const DB = "(any db_* above 0 makes the Postgres)";

/**
 * The registry, in the API schema's order (cores, then counts, then the pod settings), which is
 * the order /openapi.json lists them in.
 */
export const FIELDS = {
  cpu: {
    schema: cores(0.1, 8),
    rounded: true,
    limit: { field: "cpu_limit", factor: 2 },
    local: request("cpu_limit"),
    kubernetes: sets("resources.requests.cpu of the app container"),
  },
  cpu_limit: {
    schema: cores(0.1, 16),
    rounded: true,
    local: cpuQuota("processes share", cpuWhen),
    kubernetes: sets("resources.limits.cpu of the app container"),
  },
  queue_cpu: {
    schema: cores(0.1, 8),
    rounded: true,
    limit: { field: "queue_cpu_limit", factor: 2 },
    local: request("queue_cpu_limit"),
    kubernetes: sets(`resources.requests.cpu of the worker container ${QUEUE}`),
  },
  queue_cpu_limit: {
    schema: cores(0.1, 16),
    rounded: true,
    // Image revisions have no queue workers, so only the cgroup matters.
    local: cpuQuota("queue workers share", cgroupWhen),
    kubernetes: sets(`resources.limits.cpu of the worker container ${QUEUE}`),
  },
  orchestrator_cpu: { schema: Cpu, local: notLocal(NO_ORCHESTRATOR), kubernetes: ORCHESTRATOR_K8S },
  orchestrator_cpu_limit: { schema: Cpu, local: notLocal(NO_ORCHESTRATOR), kubernetes: ORCHESTRATOR_K8S },
  executor_cpu: { schema: Cpu, local: notLocal(NO_EXECUTOR), kubernetes: EXECUTOR_K8S },
  executor_cpu_limit: { schema: Cpu, local: notLocal(NO_EXECUTOR), kubernetes: EXECUTOR_K8S },
  redis_cpu: {
    schema: cores(0.1, 8),
    rounded: true,
    limit: { field: "redis_cpu_limit", factor: 2 },
    local: request("redis_cpu_limit"),
    kubernetes: sets(`resources.requests.cpu of the Redis container ${REDIS}`),
  },
  redis_cpu_limit: {
    schema: cores(0.1, 16),
    rounded: true,
    local: cpuQuota("Redis shares", cgroupWhen),
    kubernetes: sets(`resources.limits.cpu of the Redis container ${REDIS}`),
  },
  db_cpu: {
    schema: Cpu,
    limit: { field: "db_cpu_limit", factor: 2 },
    local: notLocal(SHARED_DB),
    kubernetes: sets(`resources.requests.cpu of the Postgres container ${DB}`),
  },
  db_cpu_limit: {
    schema: Cpu,
    local: notLocal(SHARED_DB),
    kubernetes: sets(`resources.limits.cpu of the Postgres container ${DB}`),
  },
  min_scale: {
    schema: Count,
    local: { handling: "enforced", why: "the fewest API processes (0: none while idle); at most 8" },
    kubernetes: sets("replicas of the API Deployment (at least 1), or its HPA's minReplicas"),
  },
  max_scale: {
    schema: Count,
    local: { handling: "enforced", why: "the most API processes the autoscaler starts; at most 8" },
    kubernetes: sets("above min_scale: the API's HPA maxReplicas; 2 or more: a PodDisruptionBudget"),
  },
  memory_mb: {
    schema: Count,
    limit: { field: "memory_limit_mb", factor: 2 },
    local: request("memory_limit_mb"),
    kubernetes: sets("resources.requests.memory of the app container, and memory among its HPA's targets"),
  },
  memory_limit_mb: {
    schema: Count,
    local: { handling: "enforced", why: "data-segment rlimit and a memory cgroup per process" },
    kubernetes: sets("resources.limits.memory of the app container"),
  },
  queue_min_scale: {
    schema: Count,
    local: { handling: "enforced", why: "the fewest queue workers (app config `worker`); at least 1" },
    kubernetes: sets(`replicas of the queue workers' Deployment, or its HPA's minReplicas ${QUEUE}`),
  },
  queue_max_scale: {
    schema: Count,
    local: { handling: "enforced", why: "the most queue workers, scaled on their cpu; at most 8" },
    kubernetes: sets(`the queue workers' HPA maxReplicas and PodDisruptionBudget ${QUEUE}`),
  },
  queue_memory_mb: {
    schema: Count,
    limit: { field: "queue_memory_limit_mb", factor: 2 },
    local: request("queue_memory_limit_mb"),
    kubernetes: sets(`resources.requests.memory of the worker container ${QUEUE}`),
  },
  queue_memory_limit_mb: {
    schema: Count,
    local: { handling: "enforced", why: "data-segment rlimit and a memory cgroup per queue worker" },
    kubernetes: sets(`resources.limits.memory of the worker container ${QUEUE}`),
  },
  orchestrator_memory_mb: { schema: Count, local: notLocal(NO_ORCHESTRATOR), kubernetes: ORCHESTRATOR_K8S },
  orchestrator_memory_limit_mb: {
    schema: Count,
    local: notLocal(NO_ORCHESTRATOR),
    kubernetes: ORCHESTRATOR_K8S,
  },
  orchestrator_min_scale: { schema: Count, local: notLocal(NO_ORCHESTRATOR), kubernetes: ORCHESTRATOR_K8S },
  orchestrator_max_scale: { schema: Count, local: notLocal(NO_ORCHESTRATOR), kubernetes: ORCHESTRATOR_K8S },
  executor_memory_mb: { schema: Count, local: notLocal(NO_EXECUTOR), kubernetes: EXECUTOR_K8S },
  executor_memory_limit_mb: { schema: Count, local: notLocal(NO_EXECUTOR), kubernetes: EXECUTOR_K8S },
  redis_memory_mb: {
    schema: Count,
    // The cache's memory limit equals its request.
    limit: { field: "redis_memory_limit_mb", factor: 1 },
    local: request("redis_memory_limit_mb"),
    kubernetes: sets(`resources.requests.memory of the Redis container ${REDIS}`),
  },
  redis_memory_limit_mb: {
    schema: Count,
    local: { handling: "enforced", why: "Redis `maxmemory`" },
    kubernetes: sets(`resources.limits.memory of the Redis container ${REDIS}`),
  },
  db_memory_mb: {
    schema: Count,
    limit: { field: "db_memory_limit_mb", factor: 2 },
    local: notLocal(SHARED_DB),
    kubernetes: sets(`resources.requests.memory of the Postgres container ${DB}`),
  },
  db_memory_limit_mb: {
    schema: Count,
    local: notLocal(SHARED_DB),
    kubernetes: sets(`resources.limits.memory of the Postgres container ${DB}`),
  },
  db_storage_gi: {
    schema: Count,
    local: { handling: "where possible", why: NO_DB, when: dbWhen },
    kubernetes: sets(`the size of the Postgres volume claim in Gi, at least 1 ${DB}`),
  },
  db_max_connections: {
    schema: Count,
    local: { handling: "where possible", why: NO_DB, when: dbWhen },
    kubernetes: sets(`Postgres max_connections, when above 0 ${DB}`),
  },
  labels: {
    schema: Type.Record(Type.String(), Type.String()),
    local: notLocal(K8S),
    kubernetes: sets("labels of the app's Deployments and their pods"),
  },
  annotations: {
    schema: Type.Record(Type.String(), Type.String()),
    local: notLocal(K8S),
    kubernetes: sets("annotations of the app's pods"),
  },
  service_account_name: {
    schema: Type.String({ minLength: 1, maxLength: 253 }),
    local: notLocal(K8S),
    kubernetes: sets("serviceAccountName of the app's pods"),
  },
  image_pull_secrets: {
    schema: Type.Array(PullSecret),
    local: notLocal("images are pulled with the engine's own credentials of the Slipway user"),
    kubernetes: sets("imagePullSecrets of the app's pods, after Slipway's registry Secret"),
  },
  volumes: {
    schema: Type.Array(Volume),
    local: notLocal(K8S),
    kubernetes: sets("volumes of the app's pods"),
  },
  volume_mounts: {
    schema: Type.Array(VolumeMount),
    local: notLocal(K8S),
    kubernetes: sets("volumeMounts of the app and worker containers"),
  },
  init_containers: {
    schema: Type.Array(Container),
    local: notLocal(K8S),
    kubernetes: sets("initContainers of the app's pods"),
  },
  sidecars: {
    schema: Type.Array(Container),
    local: notLocal(K8S),
    kubernetes: sets("containers of the app's pods (restartPolicy Always: a native sidecar)"),
  },
} satisfies Record<string, FieldDef>;

export type FieldName = keyof typeof FIELDS;
type Field<K extends FieldName> = (typeof FIELDS)[K]["schema"];

/** Every field's definition, typed loosely for lookups by a name read from a spec. */
export const FIELD_DEFS: Readonly<Record<string, FieldDef>> = FIELDS;

type SpecProperties = { [K in FieldName]: TOptional<TUnsafe<Static<Field<K>> | null>> };

function specProperties(): SpecProperties {
  const out: Record<string, TSchema> = {};
  // Optional and nullable: in requests, omitted and null both mean "not given".
  for (const [name, def] of Object.entries(FIELD_DEFS)) out[name] = Type.Optional(OrNull(def.schema));
  return out as SpecProperties;
}

/** Request and response: only the keys that are set are stored and returned. */
export const ResourceSpec = Type.Object(specProperties(), closed);
/** A spec as sent or stored: null (sent) and absent both mean "not given". */
export type ResourceSpec = Static<typeof ResourceSpec>;
/** A spec's set values. */
export type SpecValues = { [K in FieldName]?: NonNullable<ResourceSpec[K]> };
