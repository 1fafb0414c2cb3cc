import { type SQL, sql } from "drizzle-orm";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import type { StatusChange } from "../../db/schema/deployments.ts";
import { revisionSecrets } from "../../db/schema/deployments.ts";
import { fromNow, isoSql, sqlList, uuidList } from "../../db/sql.ts";
import {
  assertTransition,
  isTerminal,
  type RevisionStatus,
  statusMessage,
  TERMINAL_REVISION_STATUSES,
} from "../../reconciler/states.ts";
import type { SecretReference, Source } from "../deployments/schema.ts";

/**
 * The only module that writes SQL on `revisions` and `revision_secrets` (leases and claims aside:
 * reconciler/store.ts). Every status change goes through `writeRevisionStatus`.
 */

/** A revision as the API shows it. */
export interface RevisionRow {
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

/** Newest first (by sequence number); `statuses` narrows, `remote` keeps listener-served (or other) ones. */
export function listRevisionRows(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  page: { statuses?: readonly string[]; remote?: boolean; limit: number; offset: number },
): Promise<RevisionRow[]> {
  const where: SQL[] = [sql`d.workspace_id = ${workspaceId}`, sql`r.deployment_id = ${deploymentId}`];
  if (page.statuses !== undefined) where.push(sql`r.status IN (${sqlList(page.statuses)})`);
  if (page.remote !== undefined) {
    where.push(page.remote ? sql`r.listener_id IS NOT NULL` : sql`r.listener_id IS NULL`);
  }
  return rows<RevisionRow>(
    exec,
    sql`${SELECT} WHERE ${sql.join(where, sql` AND `)} ORDER BY r.seq DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
  );
}

export async function findRevisionRow(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionRow | undefined> {
  const [row] = await rows<RevisionRow>(
    exec,
    sql`${SELECT} WHERE d.workspace_id = ${workspaceId} AND r.deployment_id = ${deploymentId} AND r.id = ${revisionId}`,
  );
  return row;
}

/** The status of a revision of the workspace, its row locked for the rest of the transaction. */
export async function lockRevisionStatus(
  tx: Executor,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionStatus | undefined> {
  const [row] = await rows<{ status: RevisionStatus }>(
    tx,
    sql`SELECT r.status FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE d.workspace_id = ${workspaceId} AND r.deployment_id = ${deploymentId} AND r.id = ${revisionId}
         FOR UPDATE OF r`,
  );
  return row?.status;
}

export async function revisionStatus(exec: Reader, id: string): Promise<RevisionStatus | undefined> {
  const [row] = await rows<{ status: RevisionStatus }>(
    exec,
    sql`SELECT status FROM revisions WHERE id = ${id}`,
  );
  return row?.status;
}

export interface NewRevision {
  id: string;
  deploymentId: string;
  seq: number;
  source: Source;
  sourceRevisionConfig: Record<string, unknown>;
  resourceSpec: Record<string, unknown> | null;
  secretReferences: SecretReference[] | null;
  buildConfig: Record<string, unknown>;
  /** The listener that serves it, or null for this server's own runtime. */
  listenerId: string | null;
  /** Creation time, also the time of its first status (QUEUED). */
  at: string;
}

/** A new revision, QUEUED. */
export async function insertRevisionRow(exec: Executor, r: NewRevision): Promise<void> {
  const history: StatusChange[] = [{ status: "QUEUED", at: r.at }];
  const json = (v: unknown) => (v === null ? null : JSON.stringify(v));
  await exec.execute(
    sql`INSERT INTO revisions (id, deployment_id, seq, status, source, source_revision_config, resource_spec,
                               secret_references, build_config, listener_id, status_history, created_at, updated_at)
        VALUES (${r.id}, ${r.deploymentId}, ${r.seq}, 'QUEUED', ${r.source},
                ${JSON.stringify(r.sourceRevisionConfig)}::jsonb, ${json(r.resourceSpec)}::jsonb,
                ${json(r.secretReferences)}::jsonb, ${JSON.stringify(r.buildConfig)}::jsonb, ${r.listenerId},
                ${JSON.stringify(history)}::jsonb, ${r.at}, ${r.at})`,
  );
}

/** Which rows a status write moves: one revision, or the other revisions of a deployment. */
export type StatusTarget = { revisionId: string } | { deploymentId: string; exceptRevisionId: string };

export interface StatusWrite {
  /** The statuses a row may move from (each checked against the transitions table); others stay. */
  from: readonly RevisionStatus[];
  to: RevisionStatus;
  /** Why (the history entry and `status_message` show it). */
  message?: string;
  /** When; `updated_at` takes the database's clock when absent. */
  at?: string;
  /**
   * A worker's lease: the write happens only while `owner` holds it, and renews it (a terminal
   * status releases it). Without one, the lease is left as it is (the API's writes).
   */
  lease?: { owner: string; leaseMs: number };
}

/**
 * The one writer of revision statuses: checks the transitions table, appends `status_history`,
 * sets `status_message` (and `interrupt_requested` for INTERRUPTED), conditional on the status
 * (and lease) read before. Returns how many rows moved.
 */
export async function writeRevisionStatus(
  exec: Executor,
  target: StatusTarget,
  w: StatusWrite,
): Promise<number> {
  for (const from of w.from) assertTransition(from, w.to);
  if (w.from.length === 0) return 0;
  const at = w.at ?? new Date().toISOString();
  const change: StatusChange = { status: w.to, at, ...(w.message ? { message: w.message } : {}) };
  const sets: SQL[] = [
    sql`status = ${w.to}`,
    sql`status_history = status_history || ${JSON.stringify([change])}::jsonb`,
    sql`status_message = ${statusMessage(w.to, w.message)}`,
    w.at === undefined ? sql`updated_at = now()` : sql`updated_at = ${w.at}`,
  ];
  if (w.to === "INTERRUPTED") sets.push(sql`interrupt_requested = true`);
  const where: SQL[] = [sql`status IN (${sqlList(w.from)})`];
  if ("revisionId" in target) where.push(sql`id = ${target.revisionId}`);
  else where.push(sql`deployment_id = ${target.deploymentId}`, sql`id <> ${target.exceptRevisionId}`);
  if (w.lease) {
    where.push(sql`lease_owner = ${w.lease.owner}`);
    if (isTerminal(w.to)) sets.push(sql`lease_owner = NULL`, sql`lease_expires_at = NULL`);
    else sets.push(sql`lease_expires_at = ${fromNow(w.lease.leaseMs)}`);
  }
  const moved = await rows<{ id: string }>(
    exec,
    sql`UPDATE revisions SET ${sql.join(sets, sql`, `)} WHERE ${sql.join(where, sql` AND `)} RETURNING id`,
  );
  return moved.length;
}

/** What a new revision copies from an existing one. */
export interface RevisionContentRow {
  source: Source;
  source_revision_config: Record<string, unknown>;
  resource_spec: Record<string, unknown> | null;
  secret_references: SecretReference[] | null;
}

export async function revisionContentRow(
  exec: Reader,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionContentRow | undefined> {
  const [row] = await rows<RevisionContentRow>(
    exec,
    sql`SELECT source, source_revision_config, resource_spec, secret_references
          FROM revisions WHERE id = ${revisionId} AND deployment_id = ${deploymentId}`,
  );
  return row;
}

/** The latest revision as a PATCH builds on it (secret values are read only under the lock). */
export interface LatestRevision extends RevisionContentRow {
  id: string;
  secret_names: string[] | null;
}

export async function latestRevisionRow(
  exec: Reader,
  revisionId: string,
): Promise<LatestRevision | undefined> {
  const [row] = await rows<LatestRevision>(
    exec,
    sql`SELECT r.id, r.source, r.source_revision_config, r.resource_spec, r.secret_references,
               (SELECT json_agg(s.name ORDER BY s.position) FROM revision_secrets s WHERE s.revision_id = r.id)
                 AS secret_names
          FROM revisions r WHERE r.id = ${revisionId}`,
  );
  return row;
}

/** A secret as stored: its value is an envelope bound to the row id (deployments/secrets.ts opens it). */
export interface StoredSecret {
  id: string;
  name: string;
  value_enc: string;
}

export async function insertSecretRows(exec: Executor, revisionId: string, secrets: StoredSecret[]) {
  if (secrets.length === 0) return;
  await exec
    .insert(revisionSecrets)
    .values(
      secrets.map((s, position) => ({ id: s.id, revisionId, name: s.name, valueEnc: s.value_enc, position })),
    );
}

export function secretRows(exec: Reader, revisionId: string): Promise<StoredSecret[]> {
  return rows<StoredSecret>(
    exec,
    sql`SELECT id, name, value_enc FROM revision_secrets WHERE revision_id = ${revisionId} ORDER BY position`,
  );
}

// ── what the reconciler records while it works ───────────────────────────────────────────────

/** The commit a git source resolved to, so a redeploy or a restart builds the same one. */
export async function recordCommit(exec: Executor, revisionId: string, sha: string): Promise<void> {
  await exec.execute(
    sql`UPDATE revisions
           SET source_revision_config = jsonb_set(source_revision_config, '{repo_commit_sha}', to_jsonb(${sha}::text)),
               updated_at = now()
         WHERE id = ${revisionId}`,
  );
}

/** Faults counted so far (the failure policy gives up after a few). */
export async function setAttempts(exec: Executor, revisionId: string, attempts: number): Promise<void> {
  await exec.execute(sql`UPDATE revisions SET attempts = ${attempts} WHERE id = ${revisionId}`);
}

/** Whether a newer revision of the deployment is queued and not started: this one is then skipped. */
export async function newerRevisionWaiting(
  exec: Reader,
  deploymentId: string,
  seq: number,
): Promise<boolean> {
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM revisions WHERE deployment_id = ${deploymentId} AND seq > ${seq}
           AND status IN (${sqlList(["QUEUED", "AWAITING_BUILD"])}) LIMIT 1`,
  );
  return found.length > 0;
}

/** A deployment's revisions that have not ended, with their status. */
export function unfinishedRevisions(
  exec: Reader,
  deploymentId: string,
): Promise<{ id: string; status: RevisionStatus }[]> {
  return rows(
    exec,
    sql`SELECT id, status FROM revisions
         WHERE deployment_id = ${deploymentId} AND status NOT IN (${sqlList([...TERMINAL_REVISION_STATUSES])})`,
  );
}

export async function revisionIdsOf(exec: Reader, deploymentId: string): Promise<string[]> {
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM revisions WHERE deployment_id = ${deploymentId}`,
  );
  return found.map((r) => r.id);
}

// ── revisions served by listeners ────────────────────────────────────────────────────────────

/**
 * What a listener should run: per deployment of it that is not being deleted, the newest revision
 * that is rolling out (DEPLOYING) or serves (DEPLOYED). A failed or interrupted rollout drops out,
 * so the previous revision is desired again.
 */
export function desiredPairs(
  exec: Reader,
  listenerId: string,
): Promise<{ deployment_id: string; revision_id: string }[]> {
  return rows(
    exec,
    sql`SELECT DISTINCT ON (r.deployment_id) r.deployment_id, r.id AS revision_id
          FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE r.listener_id = ${listenerId} AND r.status IN ('DEPLOYING', 'DEPLOYED')
           AND d.status <> 'AWAITING_DELETE'
         ORDER BY r.deployment_id, r.seq DESC`,
  );
}

export interface RemoteRevisionRow {
  revision_id: string;
  deployment_id: string;
  name: string;
  deployment_type: string;
  namespace: string | null;
  source: Source;
  source_revision_config: Record<string, unknown>;
  image_ref: string | null;
  resource_spec: Record<string, unknown> | null;
  secret_references: SecretReference[] | null;
}

/** What a listener is told of each revision it should run. */
export function remoteRevisionRows(
  exec: Reader,
  revisionIds: readonly string[],
): Promise<RemoteRevisionRow[]> {
  if (revisionIds.length === 0) return Promise.resolve([]);
  return rows<RemoteRevisionRow>(
    exec,
    sql`SELECT r.id AS revision_id, r.deployment_id, d.name, d.deployment_type,
               d.source_config->'listener_config'->>'k8s_namespace' AS namespace, r.source,
               r.source_revision_config, r.image_ref, r.resource_spec, r.secret_references
          FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE r.id IN (${uuidList(revisionIds)})
         ORDER BY d.name, d.id`,
  );
}

/** Of these ids, those of revisions the listener serves. */
export async function revisionsOfListener(
  exec: Reader,
  listenerId: string,
  revisionIds: readonly string[],
): Promise<Set<string>> {
  if (revisionIds.length === 0) return new Set();
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM revisions WHERE listener_id = ${listenerId} AND id IN (${uuidList(revisionIds)})`,
  );
  return new Set(found.map((r) => r.id));
}

/** The listener's last report of a revision (the worker rolling it out waits for one). */
export async function recordRemoteState(
  exec: Executor,
  revisionId: string,
  state: string,
  reason: string | null,
): Promise<void> {
  await exec.execute(
    sql`UPDATE revisions SET remote_state = ${state}, remote_reason = ${reason} WHERE id = ${revisionId}`,
  );
}

export async function remoteState(
  exec: Reader,
  revisionId: string,
): Promise<
  { remote_state: string | null; remote_reason: string | null; listener_id: string | null } | undefined
> {
  const [row] = await rows<{
    remote_state: string | null;
    remote_reason: string | null;
    listener_id: string | null;
  }>(exec, sql`SELECT remote_state, remote_reason, listener_id FROM revisions WHERE id = ${revisionId}`);
  return row;
}

/** The image a revision was built into and pushed as (sources that are not images, run by a listener). */
export async function recordImageRef(exec: Executor, revisionId: string, imageRef: string): Promise<void> {
  await exec.execute(sql`UPDATE revisions SET image_ref = ${imageRef} WHERE id = ${revisionId}`);
}
