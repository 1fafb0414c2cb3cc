// Pure: a deployment's pods as the listener reports them after (and during) rollout, each with a
// state and, when not ready, the kubelet's or the controller's reason; and whether the desired
// revision still serves (an API pod of it ready). Read from the watch caches only.
import type { DeploymentPodsReport, PodReport, PodState } from "../protocol/listener.ts";
import { LABEL_COMPONENT, LABEL_REVISION } from "./manifests/common.ts";

type Obj = Record<string, unknown>;

const obj = (v: unknown): Obj => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(obj) : []);
const str = (v: unknown): string => (typeof v === "string" ? v : "");
const count = (v: unknown): number => (typeof v === "number" && v >= 0 ? Math.floor(v) : 0);

/** Longest reason sent (the protocol's limit). */
const MAX_REASON = 2000;

const withMessage = (reason: string, message: string) =>
  (message ? `${reason}: ${message}` : reason).slice(0, MAX_REASON);

/** A pod's state and reason from its status as the kubelet and the scheduler write it. */
export function podState(pod: Obj): {
  state: PodState;
  reason?: string;
  restarts: number;
  startedAt?: string;
} {
  const status = obj(pod.status);
  const containers = list(status.containerStatuses);
  const inits = list(status.initContainerStatuses);
  const restarts = [...inits, ...containers].reduce((sum, c) => sum + count(c.restartCount), 0);
  const startedAt = containers.map((c) => str(obj(obj(c.state).running).startedAt)).find(Boolean);
  const base = { restarts, ...(startedAt ? { startedAt } : {}) };
  // Evicted, or ended with nothing to restart it: the ReplicaSet makes another pod.
  if (status.phase === "Failed") {
    return {
      ...base,
      state: "failed",
      reason: withMessage(str(status.reason) || "Failed", str(status.message)),
    };
  }
  const ready = list(status.conditions).some((c) => c.type === "Ready" && c.status === "True");
  if (ready) return { ...base, state: "ready" };
  const unschedulable = list(status.conditions).find(
    (c) => c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable",
  );
  if (unschedulable)
    return { ...base, state: "starting", reason: withMessage("Unschedulable", str(unschedulable.message)) };
  for (const c of [...inits, ...containers]) {
    const state = obj(c.state);
    const waiting = obj(state.waiting);
    const reason = str(waiting.reason);
    if (reason === "CrashLoopBackOff") {
      const last = obj(obj(c.lastState).terminated);
      const exit =
        last.exitCode === undefined
          ? ""
          : ` (last exit ${String(last.exitCode)}${last.reason ? `, ${str(last.reason)}` : ""})`;
      return {
        ...base,
        state: "crash_looping",
        reason: withMessage(`CrashLoopBackOff in container ${str(c.name)}${exit}`, str(waiting.message)),
      };
    }
    // A pod starting normally waits on these: no reason worth showing.
    if (reason && reason !== "ContainerCreating" && reason !== "PodInitializing") {
      return {
        ...base,
        state: "starting",
        reason: withMessage(`${reason} in container ${str(c.name)}`, str(waiting.message)),
      };
    }
    const terminated = obj(state.terminated);
    if (state.terminated !== undefined && count(c.restartCount) > 0) {
      return {
        ...base,
        state: "restarting",
        reason: withMessage(
          `container ${str(c.name)} exited ${String(terminated.exitCode ?? "")}`.trim(),
          str(terminated.reason),
        ),
      };
    }
  }
  return { ...base, state: restarts > 0 ? "restarting" : "starting" };
}

/** What the listener knows of one desired deployment: its revision, its app pods, its app Deployments. */
export interface PodsInput {
  deploymentId: string;
  revisionId: string;
  /** The app's pods (components api and queue) of every revision still in the cluster. */
  pods: Obj[];
  /** Its app Deployments (api, queue) as cached: a ReplicaFailure on one is a refused pod. */
  workloads: Obj[];
}

const ORDER: Record<PodState, number> = {
  crash_looping: 0,
  refused: 1,
  failed: 2,
  starting: 3,
  restarting: 4,
  ready: 5,
};

/** One deployment's pods report (pods sorted by revision, component, name). */
export function podsReport(input: PodsInput): DeploymentPodsReport {
  const pods: PodReport[] = [];
  for (const p of input.pods) {
    const meta = obj(p.metadata);
    // Going away (a finished rollout's old pods, a scale-down): no longer one of its pods.
    if (meta.deletionTimestamp) continue;
    const labels = obj(meta.labels);
    const component = str(labels[LABEL_COMPONENT]);
    if (component !== "api" && component !== "queue") continue;
    const judged = podState(p);
    pods.push({
      name: str(meta.name),
      revision_id: str(labels[LABEL_REVISION]),
      component,
      state: judged.state,
      restarts: judged.restarts,
      ...(judged.startedAt ? { started_at: judged.startedAt } : {}),
      ...(judged.reason ? { reason: judged.reason } : {}),
    });
  }
  for (const w of input.workloads) {
    const meta = obj(w.metadata);
    const labels = obj(meta.labels);
    const component = str(labels[LABEL_COMPONENT]);
    if (component !== "api" && component !== "queue") continue;
    const failure = list(obj(w.status).conditions).find(
      (c) => c.type === "ReplicaFailure" && c.status === "True",
    );
    if (!failure) continue;
    pods.push({
      name: str(meta.name),
      revision_id: str(labels[LABEL_REVISION]),
      component,
      state: "refused",
      restarts: 0,
      reason: withMessage(str(failure.reason) || "FailedCreate", str(failure.message)),
    });
  }
  pods.sort((a, b) =>
    `${a.revision_id}/${a.component}/${a.name}`.localeCompare(`${b.revision_id}/${b.component}/${b.name}`),
  );
  const own = pods.filter((p) => p.revision_id === input.revisionId && p.component === "api");
  const serving = own.some((p) => p.state === "ready");
  const report: DeploymentPodsReport = {
    deployment_id: input.deploymentId,
    revision_id: input.revisionId,
    serving,
    pods,
  };
  if (!serving) {
    const worst = [...own].filter((p) => p.reason).sort((a, b) => ORDER[a.state] - ORDER[b.state])[0];
    report.reason = worst?.reason
      ? `${worst.name}: ${worst.reason}`.slice(0, MAX_REASON)
      : own.length
        ? "no API pod is ready"
        : "no API pod runs";
  }
  return report;
}
