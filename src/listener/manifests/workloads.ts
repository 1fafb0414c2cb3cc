import type { EffectiveSpec } from "../../core/spec/effective.ts";
import type { DesiredDeployment } from "../../protocol/listener.ts";
import { type Component, LABEL_REVISION, labelsFor, metadata, replicasOf, selectorFor } from "./common.ts";
import { appContainer, podSpec } from "./pod.ts";
import type { K8sObject } from "./types.ts";

type Obj = Record<string, unknown>;

export interface WorkloadInput {
  d: DesiredDeployment;
  spec: EffectiveSpec;
  listenerId: string;
  name: string;
  component: Extract<Component, "api" | "queue">;
  envSecret: string;
  extraEnv: Obj[];
}

/** A workload's replicas: the effective scale of its process type. */
const scaleOf = (w: WorkloadInput) => replicasOf(w.component === "api" ? w.spec.web : w.spec.queue);

/**
 * An app Deployment (API or queue workers). Rolling updates never take a serving pod away before
 * its replacement is ready (maxUnavailable 0). With an HPA the replica count is left to it.
 */
export function appDeployment(w: WorkloadInput): K8sObject {
  const { d, spec: effective, listenerId } = w;
  const api = w.component === "api";
  const scale = scaleOf(w);
  const userLabels = effective.fields.labels ?? {};
  const podLabels = { ...userLabels, ...labelsFor(d, listenerId, w.component) };
  const annotations = effective.fields.annotations ?? {};
  const container = appContainer(d, effective, {
    name: api ? "app" : "worker",
    envSecret: w.envSecret,
    extraEnv: w.extraEnv,
    resourcePrefix: api ? "" : "queue_",
    http: api,
  });
  const meta = metadata(d, listenerId, w.name, w.component);
  meta.labels = { ...userLabels, ...meta.labels };
  const spec: Obj = {
    selector: { matchLabels: selectorFor(d, w.component) },
    revisionHistoryLimit: 5,
    progressDeadlineSeconds: 600,
    strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
    template: {
      metadata: { labels: podLabels, ...(Object.keys(annotations).length ? { annotations } : {}) },
      spec: podSpec(d, effective, container),
    },
  };
  if (scale.max === scale.min) spec.replicas = scale.min;
  return { apiVersion: "apps/v1", kind: "Deployment", metadata: meta, spec };
}

/** An HPA when the part may scale (max above min): cpu, and memory when a memory request is set. */
export function autoscaler(w: WorkloadInput): K8sObject | null {
  const scale = scaleOf(w);
  if (scale.max === scale.min) return null;
  const target = (name: string) => ({
    type: "Resource",
    resource: { name, target: { type: "Utilization", averageUtilization: 80 } },
  });
  const metrics = [target("cpu")];
  const memory = w.component === "api" ? w.spec.fields.memory_mb : w.spec.fields.queue_memory_mb;
  if (memory !== undefined) metrics.push(target("memory"));
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
