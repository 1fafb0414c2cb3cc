import { type Static, Type } from "@sinclair/typebox";
import { peekDeployment } from "../../core/deployments/read-store.ts";
import { notFound } from "../../core/errors.ts";
import type { Database } from "../../db/client.ts";
import type { ProcessReader } from "../../runtimes/board.ts";

// GET /v2/deployments/{id}/processes: what runs of a deployment on this machine, per process.

export const DeploymentProcess = Type.Object({
  type: Type.Union([Type.Literal("api"), Type.Literal("queue")], {
    description:
      "`api`: runs `start` behind the router; `queue`: runs the app config's `worker`, not routed.",
  }),
  index: Type.Integer({ minimum: 1, description: "1, 2, … within its type and revision." }),
  id: Type.String({ description: "Stable across the process's restarts; not a pid." }),
  revision_id: Type.String({ format: "uuid" }),
  state: Type.Union(
    ["starting", "running", "restarting", "draining", "stopped"].map((s) => Type.Literal(s)),
    {
      description: "`restarting`: it crashed and waits for its restart; `draining`: finishing its requests.",
    },
  ),
  restarts: Type.Integer({ minimum: 0, description: "Restarts after crashes so far." }),
  started_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
    description: "When its current process started.",
  }),
  memory_bytes: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description:
      "Resident memory of the process and all it started; null where it cannot be read (containers).",
  }),
});
export type DeploymentProcess = Static<typeof DeploymentProcess>;

export const DeploymentProcessList = Type.Object({ resources: Type.Array(DeploymentProcess) });
export type DeploymentProcessList = Static<typeof DeploymentProcessList>;

/**
 * The processes of a deployment of the workspace that run in this Slipway process, API processes
 * first; 404 when the workspace has no such deployment. Empty when nothing runs here (scaled to
 * zero, not deployed yet, or served by another Slipway process sharing the database).
 */
export async function listDeploymentProcesses(
  db: Database,
  reader: ProcessReader | undefined,
  workspaceId: string,
  deploymentId: string,
): Promise<DeploymentProcessList> {
  const record = await peekDeployment(db, workspaceId, deploymentId);
  if (!record) throw notFound("Deployment not found.");
  const found = (await reader?.processes(deploymentId)) ?? [];
  const order = (p: { type: string; revisionId: string; index: number }) =>
    `${p.type}/${p.revisionId}/${p.index}`;
  found.sort((a, b) => order(a).localeCompare(order(b), "en", { numeric: true }));
  return {
    resources: found.map((p) => ({
      type: p.type,
      index: p.index,
      id: p.id,
      revision_id: p.revisionId,
      state: p.state,
      restarts: p.restarts,
      started_at: p.startedAt === undefined ? null : new Date(p.startedAt).toISOString(),
      memory_bytes: p.memoryBytes ?? null,
    })),
  };
}
