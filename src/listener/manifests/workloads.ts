import type { EffectiveSpec } from "../../core/spec/effective.ts";
import type { DesiredDeployment } from "../../protocol/listener.ts";
import {
  type Component,
  LABEL_REVISION,
  metadata,
  replicasOf,
  selectorFor,
  workloadLabels,
} from "./common.ts";
import { appContainer, podSpec } from "./pod.ts";
import type { K8sObject, PodSecurity } from "./types.ts";

type Obj = Record<string, unknown>;

export interface WorkloadInput {
  d: DesiredDeployment;
  spec: EffectiveSpec;
  listenerId: string;
  name: string;
  component: Extract<Component, "api" | "queue">;
  envSecret: string;
  extraEnv: Obj[];
  podSecurity?: PodSecurity;
}

/** A workload's replicas: the effective scale of its process type. */
const scaleOf = (w: WorkloadInput) => replicasOf(w.component === "api" ? w.spec.web : w.spec.queue);

/**
 * An app Deployment (API or queue workers) and its HPA when it scales on a metric the HPA can
 * compute. Rolling updates never take a serving pod away before its replacement is ready
 * (maxUnavailable 0). With an HPA the replica count is left to it; without one it is set.
 */
export function appWorkload(w: WorkloadInput): { deployment: K8sObject; autoscaler: K8sObject | null } {
  const deployment = appDeployment(w);
  const hpa = autoscaler(w, deployment);
  if (!hpa) (deployment.spec as Obj).replicas = scaleOf(w).min;
  return { deployment, autoscaler: hpa };
}

function appDeployment(w: WorkloadInput): K8sObject {
  const { d, spec: effective, listenerId } = w;
  const api = w.component === "api";
  const scale = scaleOf(w);
  const userLabels = effective.fields.labels ?? {};
  const podLabels = { ...userLabels, ...workloadLabels(d, listenerId, w.component) };
  const annotations = effective.fields.annotations ?? {};
  const container = appContainer(d, effective, {
    name: api ? "app" : "worker",
    envSecret: w.envSecret,
    extraEnv: w.extraEnv,
    resourcePrefix: api ? "" : "queue_",
    http: api,
  });
  const meta = metadata(d, listenerId, w.name, w.component);
  meta.labels = { ...userLabels, ...workloadLabels(d, listenerId, w.component) };
  const spec: Obj = {
    selector: { matchLabels: selectorFor(d, w.component) },
    revisionHistoryLimit: 5,
    progressDeadlineSeconds: 600,
    strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
    template: {
      metadata: { labels: podLabels, ...(Object.keys(annotations).length ? { annotations } : {}) },
      spec: podSpec(d, effective, container, w.podSecurity),
    },
  };
  if (scale.max === scale.min) spec.replicas = scale.min;
  return { apiVersion: "apps/v1", kind: "Deployment", metadata: meta, spec };
}

/**
 * The containers whose requests the HPA sums for a pod's utilization: the pod's containers and its
 * native sidecars (init containers that keep running). One without the request fails the metric
 * (FailedGetResourceMetric).
 */
function measuredContainers(deployment: K8sObject): Obj[] {
  const pod = ((deployment.spec as Obj).template as Obj).spec as Obj;
  const init = ((pod.initContainers ?? []) as Obj[]).filter((c) => c.restartPolicy === "Always");
  return [...((pod.containers ?? []) as Obj[]), ...init];
}

const hasRequest = (c: Obj, resource: string) =>
  (((c.resources as Obj | undefined)?.requests ?? {}) as Obj)[resource] !== undefined;

/**
 * An HPA when the part may scale (max above min), on the metrics it can compute: cpu, then memory,
 * each only when every measured container requests it. None computable: no HPA (the least
 * replicas run), since an HPA without metrics falls back to cpu and fails the same way.
 */
export function autoscaler(w: WorkloadInput, deployment: K8sObject): K8sObject | null {
  const scale = scaleOf(w);
  if (scale.max === scale.min) return null;
  const target = (name: string) => ({
    type: "Resource",
    resource: { name, target: { type: "Utilization", averageUtilization: 80 } },
  });
  const containers = measuredContainers(deployment);
  const metrics = ["cpu", "memory"].filter((r) => containers.every((c) => hasRequest(c, r))).map(target);
  if (metrics.length === 0) return null;
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: metadata(w.d, w.listenerId, w.name, w.component),
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: w.name },
      minReplicas: scale.min,
      maxReplicas: scale.max,
      metrics,
    },
  };
}

/** A PDB when more than one replica may run: voluntary evictions take one pod at a time. */
export function disruptionBudget(w: WorkloadInput): K8sObject | null {
  if (scaleOf(w).max < 2) return null;
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: metadata(w.d, w.listenerId, w.name, w.component),
    spec: { maxUnavailable: 1, selector: { matchLabels: selectorFor(w.d, w.component) } },
  };
}

/** The revision a Deployment (or its pod template) runs, from its labels. */
export function revisionOf(obj: { metadata?: { labels?: Record<string, string> } }): string | undefined {
  return obj.metadata?.labels?.[LABEL_REVISION];
}
