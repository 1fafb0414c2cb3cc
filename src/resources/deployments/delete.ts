import { sql } from "drizzle-orm";
import { type Executor, rows } from "../../db/client.ts";
import type { AppDeps } from "../../deps.ts";
import { notFound } from "../../http/errors.ts";
import { assertDeploymentTransition, type DeploymentStatus } from "../revisions/states.ts";
import { detachTracingProjects } from "../tracing-projects/service.ts";
import type { Caller } from "./create.ts";
import { findDeployment } from "./record.ts";
import { lockDeployment } from "./revision-writer.ts";
import type { Deployment } from "./schema.ts";

/**
 * Removes a deployment that is AWAITING_DELETE, with its revisions, secrets and taggings (the
 * foreign keys cascade); its tracing project stays, detached. The reconciler calls this once the
 * runtime has torn the deployment down. Returns whether a row was removed.
 */
export async function removeDeployment(exec: Executor, id: string): Promise<boolean> {
  const removed = await rows<{ id: string }>(
    exec,
    sql`DELETE FROM deployments WHERE id = ${id} AND status = 'AWAITING_DELETE' RETURNING id`,
  );
  return removed.length > 0;
}

/**
 * DELETE /v2/deployments/{id}: AWAITING_DELETE and the tracing project detached, in one
 * transaction. Without a reconciler nothing has to be torn down, so the row goes at once.
 * Deleting again while the teardown runs answers the same record.
 */
export async function deleteDeployment(deps: AppDeps, caller: Caller, id: string): Promise<Deployment> {
  const immediate = !deps.config.reconciler.enabled;
  const record = await deps.db.orm.transaction(async (tx) => {
    const d = await lockDeployment(tx, caller.workspaceId, id);
    if (!d) throw notFound("Deployment not found.");
    if (d.status !== "AWAITING_DELETE") {
      assertDeploymentTransition(d.status as DeploymentStatus, "AWAITING_DELETE");
      await tx.execute(
        sql`UPDATE deployments SET status = 'AWAITING_DELETE', updated_at = ${new Date().toISOString()}
             WHERE id = ${id}`,
      );
      await detachTracingProjects(tx, id);
    }
    const current = await findDeployment(tx, caller.workspaceId, id);
    if (!current) throw new Error("deployment vanished under its row lock");
    if (immediate) await removeDeployment(tx, id);
    return current;
  });
  if (!immediate) await deps.db.notify("slipway_work", id);
  return record;
}
