// A revision's rollout state from its Deployments and pods, as `kubectl rollout status` judges it,
// plus the failures a Deployment alone does not show (image pulls and crash loops are in pods).
import type { RevisionReport, RevisionState } from "../protocol/listener.ts";

type Obj = Record<string, unknown>;

const obj = (v: unknown): Obj => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const n = (v: unknown): number => (typeof v === "number" ? v : 0);
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(obj) : []);

const IMAGE_PULL = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"]);
/** Waiting reasons that no retry mends without a change (a missing Secret or key, a bad command). */
const CONFIG = new Set(["CreateContainerConfigError", "CreateContainerError", "RunContainerError"]);

export interface Judged {
  state: RevisionState;
  reason?: string;
}

/** One Deployment: applied (not yet seen by the controller), progressing, available or failed. */
export function deploymentState(deployment: Obj): Judged {
  const meta = obj(deployment.metadata);
  const spec = obj(deployment.spec);
  const status = obj(deployment.status);
  if (status.observedGeneration === undefined || n(status.observedGeneration) < n(meta.generation)) {
    return { state: "applied" };
  }
  // Read only once the controller has seen this template (as kubectl does): until then the
  // condition may be the previous rollout's.
  // Pods the ReplicaSet could not create (Pod Security or a ResourceQuota refused them) never come:
  // waiting out the progress deadline would only hide the reason.
  const replicaFailure = list(status.conditions).find(
    (c) => c.type === "ReplicaFailure" && c.status === "True",
  );
  if (replicaFailure) {
    const message = typeof replicaFailure.message === "string" ? `: ${replicaFailure.message}` : "";
    return {
      state: "failed",
      reason: `ReplicaFailure (${String(replicaFailure.reason ?? "FailedCreate")})${message}`,
    };
  }
  const progressing = list(status.conditions).find((c) => c.type === "Progressing");
  if (progressing?.status === "False" && progressing.reason === "ProgressDeadlineExceeded") {
    const message = typeof progressing.message === "string" ? `: ${progressing.message}` : "";
    return { state: "failed", reason: `ProgressDeadlineExceeded${message}` };
  }
  const wanted = typeof spec.replicas === "number" ? spec.replicas : 1;
  const updated = n(status.updatedReplicas);
  const done = updated >= wanted && n(status.replicas) <= updated && n(status.availableReplicas) >= updated;
  return done ? { state: "available" } : { state: "progressing" };
}

/** An image pull failure or crash loop among the revision's pods, as a reason; undefined when none. */
export function podFailure(pods: Obj[]): string | undefined {
  for (const pod of pods) {
    const status = obj(pod.status);
    const unschedulable = list(status.conditions).find(
      (c) => c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable",
    );
    if (unschedulable) {
      const message = typeof unschedulable.message === "string" ? `: ${unschedulable.message}` : "";
      return `unschedulable pod ${String(obj(pod.metadata).name)}${message}`;
    }
    const containers = [...list(status.initContainerStatuses), ...list(status.containerStatuses)];
    for (const c of containers) {
      const waiting = obj(obj(c.state).waiting);
      const reason = typeof waiting.reason === "string" ? waiting.reason : "";
      const message = typeof waiting.message === "string" && waiting.message ? `: ${waiting.message}` : "";
      if (IMAGE_PULL.has(reason))
        return `image pull failure (${reason}) for container ${String(c.name)}${message}`;
      if (CONFIG.has(reason)) return `${reason} in container ${String(c.name)}${message}`;
      if (reason === "CrashLoopBackOff") {
        return `crash loop (CrashLoopBackOff) in container ${String(c.name)} after ${n(c.restartCount)} restarts${message}`;
      }
    }
  }
  return undefined;
}

const ORDER: RevisionState[] = ["applied", "progressing", "available"];

/** The revision's state over its workloads (API and queue workers) and pods: the least advanced wins. */
export function revisionState(revisionId: string, deployments: Obj[], pods: Obj[]): RevisionReport {
  const judged = deployments.map(deploymentState);
  const failed = judged.find((j) => j.state === "failed");
  if (failed) return { revision_id: revisionId, state: "failed", reason: failed.reason };
  if (judged.length === 0) return { revision_id: revisionId, state: "applied" };
  // A rolled-out revision stays available; pods are read for why a rollout does not finish.
  if (judged.every((j) => j.state === "available")) return { revision_id: revisionId, state: "available" };
  const podReason = podFailure(pods);
  if (podReason) return { revision_id: revisionId, state: "failed", reason: podReason };
  const least = Math.min(...judged.map((j) => ORDER.indexOf(j.state)));
  return { revision_id: revisionId, state: ORDER[least] ?? "applied" };
}
