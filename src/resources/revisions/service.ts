import type { Keyring } from "../../crypto/envelope.ts";
import { WORK_CHANNEL } from "../../db/channels.ts";
import type { Database, Reader } from "../../db/client.ts";
import type { WorkspaceCaller } from "../../http/auth.ts";
import { badRequest, notFound } from "../../http/errors.ts";
import { isTerminal, REVISION_STATUSES, type RevisionStatus } from "../../reconciler/states.ts";
import { commaList } from "../deployments/list.ts";
import { findDeployment, toSourceRevisionConfig } from "../deployments/record.ts";
import { insertRevision, readRevisionContent } from "../deployments/revision-writer.ts";
import type { Deployment } from "../deployments/schema.ts";
import { deploymentExists, lockDeployment } from "../deployments/store.ts";
import type { ListRevisionsQuery, Revision, RevisionList } from "./schema.ts";
import {
  findRevisionRow,
  listRevisionRows,
  lockRevisionStatus,
  type RevisionRow,
  writeRevisionStatus,
} from "./store.ts";

export function toRevision(row: RevisionRow): Revision {
  return {
    id: row.id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    status: row.status,
    source: row.source,
    source_revision_config: toSourceRevisionConfig(row.source_revision_config),
    deployment_id: row.deployment_id,
    status_history: row.status_history.map((h) => ({
      status: h.status as RevisionStatus,
      at: h.at,
      ...(h.message === undefined ? {} : { message: h.message }),
    })),
    status_message: row.status_message,
  };
}

/** Newest first (by sequence number), optionally only some statuses. */
export async function listRevisions(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  q: ListRevisionsQuery,
): Promise<RevisionList> {
  const statuses =
    q.status === undefined
      ? undefined
      : commaList(
          q.status,
          "status",
          (s) => (REVISION_STATUSES as readonly string[]).includes(s),
          `a revision status (${REVISION_STATUSES.join(", ")})`,
        );
  const list = await listRevisionRows(exec, workspaceId, deploymentId, {
    statuses,
    remote: q.remote_reconciled,
    limit: q.limit,
    offset: q.offset,
  });
  // An empty page is only a 404 when the deployment itself is not there.
  if (list.length === 0 && !(await deploymentExists(exec, workspaceId, deploymentId))) {
    throw notFound("Deployment not found.");
  }
  return { resources: list.map(toRevision), offset: q.offset + list.length };
}

export async function getRevision(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<Revision> {
  const row = await findRevisionRow(exec, workspaceId, deploymentId, revisionId);
  if (!row) throw notFound("Revision not found.");
  return toRevision(row);
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
): Promise<Deployment> {
  const result = await db.orm.transaction(async (tx) => {
    const d = await lockDeployment(tx, caller.workspaceId, deploymentId);
    if (!d) throw notFound("Deployment not found.");
    const content = await readRevisionContent(tx, keyring, deploymentId, revisionId);
    if (!content) throw notFound("Revision not found.");
    if (d.status === "AWAITING_DELETE") throw badRequest("The deployment is being deleted.");
    const id = await insertRevision(tx, keyring, d, content, new Date());
    const record = await findDeployment(tx, caller.workspaceId, deploymentId);
    if (!record) throw new Error("deployment vanished under its row lock");
    return { record, id };
  });
  await db.notify(WORK_CHANNEL, result.id);
  return result.record;
}

/** Stops a revision that has not ended: INTERRUPTED at once; the reconciler stops its work. */
export async function interruptRevision(
  db: Database,
  caller: WorkspaceCaller,
  deploymentId: string,
  revisionId: string,
): Promise<Revision> {
  const revision = await db.orm.transaction(async (tx) => {
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
