import { type Static, Type } from "@sinclair/typebox";
import { peekDeployment } from "../../core/deployments/read-store.ts";
import { notFound } from "../../core/errors.ts";
import type { Database } from "../../db/client.ts";
import type { PodReport } from "../../protocol/listener.ts";
import type { ProcessReader } from "../../runtimes/board.ts";
import { podsOf } from "../listeners/pods-store.ts";

// GET /v2/deployments/{id}/processes: what runs of a deployment, per process: on this machine, or
// its pods as its listener last reported them.

export const DeploymentProcess = Type.Object({
  type: Type.Union([Type.Literal("api"), Type.Literal("queue")], {
    description:
      "`api`: runs `start` behind the router; `queue`: runs the app config's `worker`, not routed.",
  }),
  index: Type.Integer({ minimum: 1, description: "1, 2, … within its type and revision." }),
  id: Type.String({
    description: "Stable across the process's restarts; not a pid (on a listener: the pod's name).",
  }),
  revision_id: Type.String({ format: "uuid" }),
  state: Type.Union(
    ["starting", "running", "restarting", "draining", "stopped"].map((s) => Type.Literal(s)),
    {
      description:
        "`restarting`: it crashed and waits for its restart (on a listener also CrashLoopBackOff); `draining`: finishing its requests; `stopped` on a listener: evicted, or never created (refused by admission or a quota; `reason` says).",
    },
  ),
  restarts: Type.Integer({ minimum: 0, description: "Restarts after crashes so far." }),
  started_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
    description: "When its current process started.",
  }),
  memory_bytes: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description:
      "Resident memory of the process and all it started; null where it cannot be read (containers, pods on a listener).",
  }),
  reason: Type.Optional(
    Type.Union([Type.String(), Type.Null()], {
      description:
        "Why it is not running (on a listener: the container state's or event's reason and message, e.g. CrashLoopBackOff, ImagePullBackOff, Unschedulable, FailedCreate); null when running or unknown.",
    }),
  ),
});
export type DeploymentProcess = Static<typeof DeploymentProcess>;

export const DeploymentHealth = Type.Object({
  serving: Type.Boolean({ description: "Whether an API pod of the revision the listener runs is ready." }),
  reason: Type.Union([Type.String(), Type.Null()], { description: "Why not, when not serving." }),
  unhealthy_since: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
    description:
      "Since when the active revision has stopped serving after its rollout (deployment.unhealthy); null while it serves.",
  }),
  unhealthy_reason: Type.Union([Type.String(), Type.Null()], {
    description: "The reason deployment.unhealthy gave.",
  }),
  reported_at: Type.String({ format: "date-time", description: "When the listener last reported its pods." }),
});
export type DeploymentHealth = Static<typeof DeploymentHealth>;

export const DeploymentProcessList = Type.Object({
  resources: Type.Array(DeploymentProcess),
  health: Type.Optional(
    Type.Union([DeploymentHealth, Type.Null()], {
      description:
        "Deployments on a listener: its last pods report (null before the first). Absent for local deployments.",
    }),
  ),
});
export type DeploymentProcessList = Static<typeof DeploymentProcessList>;

/** A pod's state in the local processes' terms (the listener's finer state stays in `reason`). */
const STATE_OF: Record<PodReport["state"], DeploymentProcess["state"]> = {
  ready: "running",
  starting: "starting",
  restarting: "restarting",
  crash_looping: "restarting",
  refused: "stopped",
  failed: "stopped",
};

/** A listener's pods in the processes' shape: numbered 1, 2, … within type and revision. */
function fromPods(pods: PodReport[]): DeploymentProcess[] {
  const counters = new Map<string, number>();
  const named = [...pods].sort((a, b) => a.name.localeCompare(b.name, "en", { numeric: true }));
  return named.map((p) => {
    const key = `${p.component}/${p.revision_id}`;
    const index = (counters.get(key) ?? 0) + 1;
    counters.set(key, index);
    return {
      type: p.component,
      index,
      id: p.name,
      revision_id: p.revision_id,
      state: STATE_OF[p.state],
      restarts: p.restarts,
      started_at: p.started_at ?? null,
      memory_bytes: null,
      reason: p.reason ?? null,
    };
  });
}

const order = (p: { type: string; revision_id: string; index: number }) =>
  `${p.type}/${p.revision_id}/${p.index}`;

/**
 * The processes of a deployment of the workspace, API processes first; 404 when the workspace
 * has no such deployment. A local deployment's are those that run in this Slipway process (empty
 * when nothing runs here: scaled to zero, not deployed yet, or served by another Slipway process
 * sharing the database); a listener's are its pods as the listener last reported them.
 */
export async function listDeploymentProcesses(
  db: Database,
  reader: ProcessReader | undefined,
  workspaceId: string,
  deploymentId: string,
): Promise<DeploymentProcessList> {
  const record = await peekDeployment(db, workspaceId, deploymentId);
  if (!record) throw notFound("Deployment not found.");
  if (typeof record.source_config.listener_id === "string") {
    const row = await podsOf(db.orm, record.id);
    if (!row) return { resources: [], health: null };
    const resources = fromPods(row.pods).sort((a, b) =>
      order(a).localeCompare(order(b), "en", { numeric: true }),
    );
    return {
      resources,
      health: {
        serving: row.serving,
        reason: row.reason,
        unhealthy_since: row.unhealthy_since,
        unhealthy_reason: row.unhealthy_reason,
        reported_at: row.reported_at,
      },
    };
  }
  const found = (await reader?.processes(deploymentId)) ?? [];
  const resources = found.map((p) => ({
    type: p.type,
    index: p.index,
    id: p.id,
    revision_id: p.revisionId,
    state: p.state,
    restarts: p.restarts,
    started_at: p.startedAt === undefined ? null : new Date(p.startedAt).toISOString(),
    memory_bytes: p.memoryBytes ?? null,
  }));
  resources.sort((a, b) => order(a).localeCompare(order(b), "en", { numeric: true }));
  return { resources };
}
