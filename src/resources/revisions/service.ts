import { type SQL, sql } from "drizzle-orm";
import { WORK_CHANNEL } from "../../db/channels.ts";
import { type Reader, rows } from "../../db/client.ts";
import type { StatusChange } from "../../db/schema/deployments.ts";
import type { AppDeps } from "../../deps.ts";
import type { WorkspaceCaller } from "../../http/auth.ts";
import { badRequest, notFound } from "../../http/errors.ts";
import { commaList } from "../deployments/list.ts";
import { findDeployment, isoSql, toSourceRevisionConfig } from "../deployments/record.ts";
import { insertRevision, lockDeployment, readRevisionContent } from "../deployments/revision-writer.ts";
import type { Deployment, Source } from "../deployments/schema.ts";
import type { ListRevisionsQuery, Revision, RevisionList } from "./schema.ts";
import {
  assertTransition,
  isTerminal,
  REVISION_STATUSES,
  type RevisionStatus,
  statusMessage,
} from "./states.ts";

interface RevisionRow {
  id: string;
  created_at: string;
  updated_at: string;
  status: RevisionStatus;
  source: Source;
  source_revision_config: Record<string, unknown>;
  deployment_id: string;
  status_history: StatusChange[];
  status_message: string | null;
}

/** Revisions of a deployment of the caller's workspace (the join is the tenancy check). */
const SELECT =
  sql.raw(`SELECT r.id, ${isoSql("r.created_at")} AS created_at, ${isoSql("r.updated_at")} AS updated_at,
       r.status, r.source, r.source_revision_config, r.deployment_id, r.status_history, r.status_message
  FROM revisions r JOIN deployments d ON d.id = r.deployment_id`);

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

export async function deploymentExists(exec: Reader, workspaceId: string, id: string): Promise<boolean> {
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM deployments WHERE id = ${id} AND workspace_id = ${workspaceId}`,
  );
  return found.length > 0;
}

/** Newest first (by sequence number), optionally only some statuses. */
export async function listRevisions(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  q: ListRevisionsQuery,
): Promise<RevisionList> {
  const where: SQL[] = [sql`d.workspace_id = ${workspaceId}`, sql`r.deployment_id = ${deploymentId}`];
  if (q.status !== undefined) {
    const statuses = commaList(
      q.status,
      "status",
      (s) => (REVISION_STATUSES as readonly string[]).includes(s),
      `a revision status (${REVISION_STATUSES.join(", ")})`,
    );
    where.push(
      sql`r.status IN (${sql.join(
        statuses.map((s) => sql`${s}`),
        sql`, `,
      )})`,
    );
  }
  // No revision is applied by a remote listener (there are none yet): `true` matches nothing.
  if (q.remote_reconciled === true) where.push(sql`false`);
  const list = await rows<RevisionRow>(
    exec,
    sql`${SELECT} WHERE ${sql.join(where, sql` AND `)} ORDER BY r.seq DESC LIMIT ${q.limit} OFFSET ${q.offset}`,
  );
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
  const [row] = await rows<RevisionRow>(
    exec,
    sql`${SELECT} WHERE d.workspace_id = ${workspaceId} AND r.deployment_id = ${deploymentId} AND r.id = ${revisionId}`,
  );
  if (!row) throw notFound("Revision not found.");
  return toRevision(row);
}

/**
 * A new revision with that revision's source, config, pinned commit, resource spec, references
 * and secrets. Returns the deployment.
 */
export async function redeployRevision(
  deps: AppDeps,
  caller: WorkspaceCaller,
  deploymentId: string,
  revisionId: string,
): Promise<Deployment> {
  const result = await deps.db.orm.transaction(async (tx) => {
    const d = await lockDeployment(tx, caller.workspaceId, deploymentId);
    if (!d) throw notFound("Deployment not found.");
    const content = await readRevisionContent(tx, deps.keyring, deploymentId, revisionId);
    if (!content) throw notFound("Revision not found.");
    if (d.status === "AWAITING_DELETE") throw badRequest("The deployment is being deleted.");
    const id = await insertRevision(tx, deps.keyring, d, content, new Date());
    const record = await findDeployment(tx, caller.workspaceId, deploymentId);
    if (!record) throw new Error("deployment vanished under its row lock");
    return { record, id };
  });
  await deps.db.notify(WORK_CHANNEL, result.id);
  return result.record;
}

/** Stops a revision that has not ended: INTERRUPTED at once; the reconciler stops its work. */
export async function interruptRevision(
  deps: AppDeps,
  caller: WorkspaceCaller,
  deploymentId: string,
  revisionId: string,
): Promise<Revision> {
  const revision = await deps.db.orm.transaction(async (tx) => {
    const [row] = await rows<{ status: RevisionStatus }>(
      tx,
      sql`SELECT r.status FROM revisions r JOIN deployments d ON d.id = r.deployment_id
           WHERE d.workspace_id = ${caller.workspaceId} AND r.deployment_id = ${deploymentId} AND r.id = ${revisionId}
           FOR UPDATE OF r`,
    );
    if (!row) throw notFound("Revision not found.");
    if (isTerminal(row.status)) {
      throw badRequest(
        `The revision has already ended (${row.status}); only a running revision can be interrupted.`,
      );
    }
    assertTransition(row.status, "INTERRUPTED");
    const at = new Date().toISOString();
    const change: StatusChange = { status: "INTERRUPTED", at, message: "Interrupted by request." };
    await tx.execute(
      sql`UPDATE revisions SET status = 'INTERRUPTED', interrupt_requested = true, updated_at = ${at},
                 status_message = ${statusMessage("INTERRUPTED", change.message)},
                 status_history = status_history || ${JSON.stringify([change])}::jsonb
           WHERE id = ${revisionId}`,
    );
    return getRevision(tx, caller.workspaceId, deploymentId, revisionId);
  });
  await deps.db.notify(WORK_CHANNEL, revisionId);
  return revision;
}
