import type { Config } from "../../config.ts";
import { inAuditedTransaction } from "../../core/audit/scope.ts";
import type { WorkspaceCaller } from "../../core/callers.ts";
import { lockDeployment } from "../../core/deployments/read-store.ts";
import { moveDeployment, removeDeployment } from "../../core/deployments/write-store.ts";
import { notFound } from "../../core/errors.ts";
import type { DeploymentStatus } from "../../core/revisions/states.ts";
import { WORK_CHANNEL } from "../../db/channels.ts";
import type { Database, Executor } from "../../db/client.ts";
import { deleteTracingProjects, detachTracingProjects } from "../tracing-projects/store.ts";
import type { BulkDeleteResult } from "./delete-schema.ts";

export interface DeleteOptions {
  /** Delete the tracing project too, instead of keeping it detached. */
  deleteTracingProject: boolean;
}

/**
 * One deployment of the caller's workspace into AWAITING_DELETE with its tracing project detached
 * (or deleted), inside the caller's transaction; the reconciler removes the row once the runtime
 * has torn the deployment down. Deleting again while the teardown runs changes nothing. Without a
 * reconciler nothing has to be torn down, so the row goes at once. Returns false when the
 * workspace has no such deployment.
 */
async function markForDeletion(
  tx: Executor,
  caller: WorkspaceCaller,
  id: string,
  opts: DeleteOptions & { immediate: boolean },
): Promise<boolean> {
  const d = await lockDeployment(tx, caller.workspaceId, id);
  if (!d) return false;
  if (d.status !== "AWAITING_DELETE") {
    await moveDeployment(tx, id, d.status as DeploymentStatus, "AWAITING_DELETE", new Date().toISOString());
    await detachTracingProjects(tx, id);
  }
  if (opts.deleteTracingProject) await deleteTracingProjects(tx, caller.workspaceId, id, d.name);
  if (opts.immediate) await removeDeployment(tx, id);
  return true;
}

/** DELETE /v2/deployments/{id}: 404 when the workspace has no such deployment; the teardown is asynchronous. */
export async function deleteDeployment(
  db: Database,
  reconciler: Pick<Config["reconciler"], "enabled">,
  caller: WorkspaceCaller,
  id: string,
  opts: DeleteOptions,
): Promise<void> {
  const immediate = !reconciler.enabled;
  const found = await inAuditedTransaction(db.orm, (tx) =>
    markForDeletion(tx, caller, id, { ...opts, immediate }),
  );
  if (!found) throw notFound("Deployment not found.");
  if (!immediate) await db.notify(WORK_CHANNEL, id);
}

/**
 * DELETE /v2/deployments?deployment_ids=…: every id in one transaction, locked in id order so two
 * overlapping bulk deletes cannot deadlock. Another workspace's id counts as not found.
 */
export async function deleteDeployments(
  db: Database,
  reconciler: Pick<Config["reconciler"], "enabled">,
  caller: WorkspaceCaller,
  ids: string[],
  opts: DeleteOptions,
): Promise<BulkDeleteResult[]> {
  const immediate = !reconciler.enabled;
  const ordered = [...ids].sort();
  const found = await inAuditedTransaction(db.orm, async (tx) => {
    const deleted = new Set<string>();
    for (const id of ordered) {
      if (await markForDeletion(tx, caller, id, { ...opts, immediate })) deleted.add(id);
    }
    return deleted;
  });
  if (!immediate) for (const id of ordered) if (found.has(id)) await db.notify(WORK_CHANNEL, id);
  return ids.map((id) =>
    found.has(id)
      ? { deployment_id: id, status: 204 }
      : { deployment_id: id, status: 404, detail: "Deployment not found." },
  );
}
