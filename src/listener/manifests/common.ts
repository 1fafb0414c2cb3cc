import type { Scale } from "../../core/spec/effective.ts";
import type { SpecValues } from "../../core/spec/fields.ts";
import type { DesiredDeployment } from "../../protocol/listener.ts";
import type { K8sObject } from "./types.ts";

export const MANAGED_BY = "slipway";
export const LABEL_DEPLOYMENT = "slipway.dev/deployment-id";
export const LABEL_REVISION = "slipway.dev/revision-id";
export const LABEL_LISTENER = "slipway.dev/listener-id";
export const LABEL_INSTANCE = "app.kubernetes.io/instance";
export const LABEL_COMPONENT = "app.kubernetes.io/component";
export const LABEL_WORKSPACE = "slipway.dev/workspace-id";

export type Component = "api" | "queue" | "database" | "cache";

/** Longest suffix added to the base name ("-queue", "-redis"): the result stays a 63-char DNS label. */
const NAME_ROOM = 63 - "-12345678".length - "-queue".length;

/** `<deployment name>-<first 8 chars of the id>`, the name part cut so every derived name fits. */
export function baseName(d: DesiredDeployment): string {
  const name = d.name.slice(0, NAME_ROOM).replace(/-+$/, "");
  return `${name}-${d.deployment_id.slice(0, 8)}`;
}

/**
 * The database StatefulSet's name: at most 52 characters, because its pods carry the label
 * `controller-revision-hash: <name>-<10-char hash>`, which must fit in 63 (kubernetes#64023).
 * Only this name is shortened: renaming the other objects of existing deployments would prune them.
 */
export const DB_STATEFULSET_MAX = 52;
export function databaseStatefulSetName(d: DesiredDeployment): string {
  const room = DB_STATEFULSET_MAX - "-12345678-db".length;
  return `${d.name.slice(0, room).replace(/-+$/, "")}-${d.deployment_id.slice(0, 8)}-db`;
}

/** The imagePullSecret made from the desired state's registry credentials. */
export const registrySecretName = (d: DesiredDeployment) => `${baseName(d)}-registry`;

/**
 * A name as a label value: alphanumeric at both ends. The API refuses names ending in '-' for
 * deployments on a listener; ones made before that rule still get objects the cluster accepts.
 */
export const labelValue = (v: string) => v.slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "");

/** A routing host whose labels are DNS labels: a first label ending in '-' (an older name) loses it. */
export const hostValue = (host: string) =>
  host
    .split(".")
    .map((p) => p.slice(0, 63).replace(/^-+|-+$/g, ""))
    .join(".");

/**
 * The labels every object of a deployment carries; `component` marks which part it belongs to.
 * No revision id: only the app's workloads carry it (`workloadLabels`), so a new revision changes
 * those alone (the database and cache are never rolled by it, and the rest is not re-applied).
 */
export function labelsFor(
  d: DesiredDeployment,
  listenerId: string,
  component?: Component,
): Record<string, string> {
  return {
    "app.kubernetes.io/name": labelValue(d.name),
    [LABEL_INSTANCE]: baseName(d),
    "app.kubernetes.io/managed-by": MANAGED_BY,
    ...(component ? { [LABEL_COMPONENT]: component } : {}),
    [LABEL_DEPLOYMENT]: d.deployment_id,
    [LABEL_LISTENER]: listenerId,
    ...(d.workspace_id ? { [LABEL_WORKSPACE]: d.workspace_id } : {}),
  };
}

/** An app workload's labels (API or queue Deployment and its pods): also the revision it runs. */
export function workloadLabels(
  d: DesiredDeployment,
  listenerId: string,
  component: "api" | "queue",
): Record<string, string> {
  return { ...labelsFor(d, listenerId, component), [LABEL_REVISION]: d.revision_id };
}

/** What a workload's selector matches: stable across revisions (a selector cannot change). */
export function selectorFor(d: DesiredDeployment, component: Component): Record<string, string> {
  return { [LABEL_INSTANCE]: baseName(d), [LABEL_COMPONENT]: component };
}

export function metadata(
  d: DesiredDeployment,
  listenerId: string,
  name: string,
  component?: Component,
): K8sObject["metadata"] {
  return { name, namespace: d.namespace, labels: labelsFor(d, listenerId, component) };
}

/** Cores → a millicore quantity ("0.5" → "500m"). */
export function cpuQuantity(cores: number): string {
  return `${Math.round(cores * 1000)}m`;
}

/** `_mb` fields are mebibytes, as the local runtime counts them. */
export function memoryQuantity(mb: number): string {
  return `${Math.round(mb)}Mi`;
}

/** The parts with requests and limits, by the prefix of their fields ("": the API processes). */
export type PartPrefix = "" | "queue_" | "redis_" | "db_";

/** requests/limits from `<prefix>cpu`, `<prefix>cpu_limit`, `<prefix>memory_mb`, `<prefix>memory_limit_mb`. */
export function resourcesFor(fields: SpecValues, prefix: PartPrefix): Record<string, unknown> {
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  const cpu = fields[`${prefix}cpu`];
  const cpuLimit = fields[`${prefix}cpu_limit`];
  const memory = fields[`${prefix}memory_mb`];
  const memoryLimit = fields[`${prefix}memory_limit_mb`];
  if (cpu !== undefined && cpu > 0) requests.cpu = cpuQuantity(cpu);
  if (memory !== undefined && memory > 0) requests.memory = memoryQuantity(memory);
  if (cpuLimit !== undefined && cpuLimit > 0) limits.cpu = cpuQuantity(cpuLimit);
  if (memoryLimit !== undefined && memoryLimit > 0) limits.memory = memoryQuantity(memoryLimit);
  const out: Record<string, unknown> = {};
  if (Object.keys(requests).length) out.requests = requests;
  if (Object.keys(limits).length) out.limits = limits;
  return out;
}

/** The replicas of a part on Kubernetes: the effective scale, never below one (no scale to zero here). */
export function replicasOf(scale: Scale): Scale {
  const min = Math.max(1, scale.min);
  return { min, max: Math.max(min, scale.max) };
}

export function base64(value: string): string {
  return Buffer.from(value, "utf8").toString("base64");
}
