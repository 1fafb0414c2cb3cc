import { inAuditedTransaction } from "../../core/audit/scope.ts";
import type { WorkspaceCaller } from "../../core/callers.ts";
import { deploymentExists, lockDeployment } from "../../core/deployments/read-store.ts";
import { insertRevision, readRevisionContent } from "../../core/deployments/revision-writer.ts";
import { badRequest, notFound } from "../../core/errors.ts";
import { findRevisionRecord, lockRevisionStatus, revisionPage } from "../../core/revisions/read-store.ts";
import { isTerminal, REVISION_STATUSES } from "../../core/revisions/states.ts";
import { writeRevisionStatus } from "../../core/revisions/status-store.ts";
import type { Keyring } from "../../crypto/envelope.ts";
import { WORK_CHANNEL } from "../../db/channels.ts";
import type { Database, Reader } from "../../db/client.ts";
import { commaList } from "../deployments/list.ts";
import type { ListRevisionsQuery } from "./schema.ts";

/** Newest first (by sequence number), optionally only some statuses. */
export async function listRevisions(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  q: ListRevisionsQuery,
): Promise<string> {
  const statuses =
    q.status === undefined
      ? undefined
      : commaList(
          q.status,
          "status",
          (s) => (REVISION_STATUSES as readonly string[]).includes(s),
          `a revision status (${REVISION_STATUSES.join(", ")})`,
        );
  const page = await revisionPage(exec, workspaceId, deploymentId, {
    statuses,
    remote: q.remote_reconciled,
    limit: q.limit,
    offset: q.offset,
  });
  // An empty page is only a 404 when the deployment itself is not there.
  if (page.count === 0 && !(await deploymentExists(exec, workspaceId, deploymentId))) {
    throw notFound("Deployment not found.");
  }
  return page.body;
}

export async function getRevision(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<string> {
  const record = await findRevisionRecord(exec, workspaceId, deploymentId, revisionId);
  if (record === undefined) throw notFound("Revision not found.");
  return record;
}

/**
 * A new revision with that revision's source, config, pinned commit, resource spec, references
 * and secrets. Returns the deployment.
 */
export async function redeployRevision(
  db: Database,
  keyring: Keyring,
  caller: WorkspaceCaller,
  deploymentId: string,
  revisionId: string,
): Promise<string> {
  return db.transaction(async (tx) => {
    const d = await lockDeployment(tx.orm, caller.workspaceId, deploymentId);
    if (!d) throw notFound("Deployment not found.");
    const content = await readRevisionContent(tx.orm, keyring, deploymentId, revisionId);
    if (!content) throw notFound("Revision not found.");
    if (d.status === "AWAITING_DELETE") throw badRequest("The deployment is being deleted.");
    return (await insertRevision({ exec: tx }, d, content, new Date())).record;
  });
}

/** Stops a revision that has not ended: INTERRUPTED at once; the reconciler stops its work. */
export async function interruptRevision(
  db: Database,
  caller: WorkspaceCaller,
  deploymentId: string,
  revisionId: string,
): Promise<string> {
  const revision = await inAuditedTransaction(db.orm, async (tx) => {
    const status = await lockRevisionStatus(tx, caller.workspaceId, deploymentId, revisionId);
    if (status === undefined) throw notFound("Revision not found.");
    if (isTerminal(status)) {
      throw badRequest(
        `The revision has already ended (${status}); only a running revision can be interrupted.`,
      );
    }
    await writeRevisionStatus(
      tx,
      { revisionId },
      { from: [status], to: "INTERRUPTED", message: "Interrupted by request.", at: new Date().toISOString() },
    );
    return getRevision(tx, caller.workspaceId, deploymentId, revisionId);
  });
  await db.notify(WORK_CHANNEL, revisionId);
  return revision;
}
