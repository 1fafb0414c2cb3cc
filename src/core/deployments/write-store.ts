import { type SQL, sql } from "drizzle-orm";
import { ANNOUNCED_SETTING, EVENTS_CHANNEL, RECORDS_CHANNEL, WORK_CHANNEL } from "../../db/channels.ts";
import { type Database, type Executor, inTransaction, rows, type Transaction } from "../../db/client.ts";
import { auditInTransaction, auditNotWritten } from "../audit/scope.ts";
import { deliveriesFor } from "../events/deliveries-store.ts";
import { emit } from "../events/emit.ts";
import { insertEventsFrom } from "../events/store.ts";
import type { DeploymentType, Source } from "../model.ts";
import { assertDeploymentTransition, type DeploymentStatus } from "../revisions/states.ts";
import { revisionMoveEvents } from "../revisions/status-store.ts";
import type { LatestContent, StoredRecord, WrittenRecord } from "./read-store.ts";

/**
 * Writes of the API on `deployments`: create, in-place changes, a new revision's commit, status
 * moves and removal. With runtime-store.ts (what the reconciler records) the only writers of the
 * table, the reconciler's lease columns aside (reconciler/store.ts). Status changes go through
 * `moveDeployment`, which checks the transitions table; creating, moving and removing a deployment
 * emit their events (core/events/emit.ts) in the same transaction.
 */

export interface NewDeployment {
  id: string;
  organizationId: string;
  workspaceId: string;
  name: string;
  source: Source;
  deploymentType: DeploymentType;
  sourceConfig: Record<string, unknown>;
  imageVersion: string | null;
  remoteReconciled: boolean;
  /** JSON text of what the first revision will take (a create without its artifact), else null. */
  pendingRevision: string | null;
  pendingSecretsEnc: string | null;
  at: string;
}

/** Throws the driver's unique violation (`deployments_workspace_name_key`) for a taken name. */
export async function insertDeployment(exec: Executor, d: NewDeployment): Promise<StoredRecord> {
  const [row] = await rows<StoredRecord>(
    exec,
    sql`INSERT INTO deployments (id, organization_id, workspace_id, name, source, deployment_type, source_config,
                                 image_version, remote_reconciled, pending_revision, pending_secrets_enc,
                                 created_at, updated_at)
        VALUES (${d.id}, ${d.organizationId}, ${d.workspaceId}, ${d.name}, ${d.source}, ${d.deploymentType},
                ${JSON.stringify(d.sourceConfig)}::jsonb, ${d.imageVersion}, ${d.remoteReconciled},
                ${d.pendingRevision}::jsonb, ${d.pendingSecretsEnc}, ${d.at}, ${d.at})
        RETURNING record, slipway_etag(record) AS etag`,
  );
  if (!row) throw new Error("INSERT … RETURNING returned no row");
  await emit(exec, {
    organizationId: d.organizationId,
    workspaceId: d.workspaceId,
    type: "deployment.created",
    data: { deployment_id: d.id, deployment_name: d.name, source: d.source, status: "AWAITING_DATABASE" },
  });
  return row;
}

/**
 * Where a deployment write runs. With `ifVersion` (PatchState.version) it writes only while the row
 * is still that version, so it may run on the pool as a statement of its own; without one it must
 * run in a transaction that holds the row lock, which the type requires.
 */
export type WriteTarget = { exec: Database | Transaction; ifVersion: string } | LockedWrite;

/** A write in the transaction that holds the deployment's row lock. */
export interface LockedWrite {
  exec: Transaction;
  ifVersion?: undefined;
}

/** Only the row version `ifVersion`, when given; any row otherwise (the caller holds its lock). */
const versionIs = (ifVersion: string | undefined) =>
  ifVersion === undefined ? sql`` : sql` AND xmin = ${ifVersion}::text::xid`;

/**
 * The fields a PATCH changes without a revision; returns the new record and row version, or undefined when
 * `ifVersion` is given and the row is no longer that version (nothing was written).
 */
export async function updateInPlace(
  { exec, ifVersion }: WriteTarget,
  id: string,
  sourceConfig: Record<string, unknown>,
  imageVersion: string | null,
  at: string,
): Promise<WrittenRecord | undefined> {
  const [row] = await rows<WrittenRecord>(
    exec,
    sql`UPDATE deployments SET source_config = ${JSON.stringify(sourceConfig)}::jsonb,
               image_version = ${imageVersion}::text, updated_at = ${at}::timestamptz
         WHERE id = ${id}::uuid${versionIs(ifVersion)}
     RETURNING record, slipway_etag(record) AS etag, xmin::text AS version`,
  );
  if (!row && ifVersion === undefined) throw new Error("deployment vanished under its row lock");
  return row;
}

/**
 * A new revision's statements (revisions/store.ts builds them, each writing only while `gate`
 * holds: the deployment was moved) and what the deployment becomes.
 */
export interface RevisionCommit {
  insertRevision: (gate: SQL) => SQL;
  insertSecrets: ((gate: SQL) => SQL) | null;
  skipOlder: ((gate: SQL) => SQL | null) | null;
  deploymentId: string;
  revisionId: string;
  seq: number;
  content: LatestContent;
  /** The in-place fields, as they are after this write. */
  sourceConfig: Record<string, unknown>;
  imageVersion: string | null;
  at: string;
}

/**
 * Commits a revision in one data-modifying statement: the deployment pointed at it (what was
 * pending is spent), the revision, its secrets, SKIPPED for the older ones not started, the
 * `revision.status_changed` events of the moves (SKIPPED first, then QUEUED) with their webhook
 * deliveries, and the request's audit record, returning the new record and row version. The
 * reconciler, the event stream and the read caches are notified after commit, by a statement of
 * their own (db/announce.ts says why), not inside the transaction.
 *
 * With `ifVersion`, the deployment moves only while it is that row version, and every other part
 * writes only when it moved: undefined then means nothing was written (a PATCH reads again). The
 * statement is then a transaction of its own, with no lock taken before it.
 */
export async function commitRevision(
  { exec, ifVersion }: WriteTarget,
  c: RevisionCommit,
): Promise<WrittenRecord | undefined> {
  const moved = sql`EXISTS (SELECT 1 FROM moved)`;
  // `set_config` runs before any row of the deployment is written (every other part waits for
  // `moved`): the read cache's triggers then leave announcing it to this write (migration 0021).
  const parts: SQL[] = [
    sql`moved AS (
    UPDATE deployments
       SET source_config = ${JSON.stringify(c.sourceConfig)}::jsonb, image_version = ${c.imageVersion}::text,
           revision_count = ${c.seq}::int, latest_revision_id = ${c.revisionId}::uuid,
           latest_revision_status = 'QUEUED',
           latest_revision_content = ${JSON.stringify(c.content)}::jsonb, updated_at = ${c.at}::timestamptz,
           pending_revision = NULL, pending_secrets_enc = NULL
     WHERE id = ${c.deploymentId}::uuid${versionIs(ifVersion)}
       AND set_config(${ANNOUNCED_SETTING}::text, ${c.deploymentId}::uuid::text, true) IS NOT NULL
     RETURNING id, record, slipway_etag(record) AS etag, xmin::text AS version, name, workspace_id, organization_id)`,
    sql`new_revision AS (${c.insertRevision(moved)} RETURNING id, status, status_message)`,
  ];
  if (c.insertSecrets) parts.push(sql`new_secrets AS (${c.insertSecrets(moved)})`);
  const skipOlder = c.skipOlder?.(moved) ?? null;
  parts.push(
    skipOlder
      ? sql`skipped AS (${skipOlder})`
      : sql`skipped AS (SELECT NULL::uuid AS id, NULL::text AS status, NULL::text AS status_message WHERE false)`,
  );
  const moves = sql`(SELECT 0 AS ord, id, status, status_message FROM skipped
                     UNION ALL SELECT 1, id, status, status_message FROM new_revision)`;
  parts.push(
    sql`new_events AS (${insertEventsFrom(revisionMoveEvents(moves, sql`moved`), new Date().toISOString())})`,
  );
  parts.push(sql`new_deliveries AS (${deliveriesFor(sql`new_events`)})`);
  const audit = auditInTransaction(undefined, moved);
  if (audit) parts.push(sql`audit AS (${audit})`);
  const [row] = await rows<WrittenRecord & { workspace_id: string }>(
    exec,
    sql`WITH ${sql.join(parts, sql`, `)}
        SELECT record, etag, version, workspace_id FROM moved`,
  );
  if (row) {
    // The reconciler, the event stream and webhooks, and every process's read cache, once
    // committed: now on the pool (the statement was its own transaction), after COMMIT in one.
    // Not awaited: the answer does not wait for a wake-up (announce.ts).
    void exec.announce([
      [WORK_CHANNEL, c.revisionId],
      [EVENTS_CHANNEL, row.workspace_id],
      [RECORDS_CHANNEL, row.workspace_id],
    ]);
    return { record: row.record, etag: row.etag, version: row.version };
  }
  if (ifVersion === undefined) throw new Error("deployment vanished under its row lock");
  // Nothing was written, the audit record included: the next attempt writes it.
  if (audit) auditNotWritten();
  return undefined;
}

/** The commit a git source resolved to, when that revision is the deployment's latest (its record shows it). */
export async function recordLatestCommit(exec: Executor, revisionId: string, sha: string): Promise<void> {
  await exec.execute(
    sql`UPDATE deployments
           SET latest_revision_content = jsonb_set(latest_revision_content, '{source_revision_config,repo_commit_sha}',
                                                   to_jsonb(${sha}::text))
         WHERE latest_revision_id = ${revisionId} AND latest_revision_content IS NOT NULL`,
  );
}

/** Moves the status along the transitions table if still `from`; `at` defaults to the database's clock. */
export async function moveDeployment(
  exec: Executor,
  id: string,
  from: DeploymentStatus,
  to: DeploymentStatus,
  at?: string,
): Promise<boolean> {
  assertDeploymentTransition(from, to);
  return inTransaction(exec, async (tx) => {
    const [moved] = await rows<EventSubject>(
      tx,
      sql`UPDATE deployments SET status = ${to}, updated_at = ${at === undefined ? sql`now()` : sql`${at}`}
           WHERE id = ${id} AND status = ${from} RETURNING ${SUBJECT}`,
    );
    if (!moved) return false;
    if (from !== to) {
      await emit(tx, {
        organizationId: moved.organization_id,
        workspaceId: moved.workspace_id,
        type: "deployment.status_changed",
        data: { deployment_id: id, deployment_name: moved.name, status: to, previous_status: from },
      });
    }
    return true;
  });
}

/**
 * `deployment.storage_exceeded`: its database went over `db_storage_gi` (the reconciler's storage
 * check calls it once per crossing, in the transaction that notes it).
 */
export async function emitStorageExceeded(
  exec: Executor,
  id: string,
  sizeBytes: number,
  limitBytes: number,
): Promise<void> {
  const [d] = await rows<EventSubject>(exec, sql`SELECT ${SUBJECT} FROM deployments WHERE id = ${id}`);
  if (d === undefined) return;
  await emit(exec, {
    organizationId: d.organization_id,
    workspaceId: d.workspace_id,
    type: "deployment.storage_exceeded",
    data: { deployment_id: id, deployment_name: d.name, size_bytes: sizeBytes, limit_bytes: limitBytes },
  });
}

/** What an event needs of the deployment it is about. */
interface EventSubject {
  name: string;
  workspace_id: string;
  organization_id: string;
}

const SUBJECT = sql.raw("name, workspace_id, organization_id");

/**
 * Removes a deployment that is AWAITING_DELETE, with its revisions, secrets and taggings (the
 * foreign keys cascade); its tracing project stays, detached. Returns whether a row was removed.
 */
export async function removeDeployment(exec: Executor, id: string): Promise<boolean> {
  return inTransaction(exec, async (tx) => {
    const [removed] = await rows<EventSubject>(
      tx,
      sql`DELETE FROM deployments WHERE id = ${id} AND status = 'AWAITING_DELETE' RETURNING ${SUBJECT}`,
    );
    if (!removed) return false;
    await emit(tx, {
      organizationId: removed.organization_id,
      workspaceId: removed.workspace_id,
      type: "deployment.deleted",
      data: { deployment_id: id, deployment_name: removed.name },
    });
    return true;
  });
}
