// Why over 300 lines: every statement on `revisions` and `revision_secrets` lives here by rule (test/db/sql-ownership.test.ts).
import { type SQL, sql } from "drizzle-orm";
import { type Executor, inTransaction, type Reader, rows } from "../../db/client.ts";
import { revisionSecrets, type StatusChange } from "../../db/schema/deployments.ts";
import { fromNow, sqlList, uuidList } from "../../db/sql.ts";
import {
  assertTransition,
  isTerminal,
  type RevisionStatus,
  statusMessage,
  TERMINAL_REVISION_STATUSES,
} from "../../reconciler/states.ts";
import type { SecretReference, Source } from "../deployments/schema.ts";
import { emit } from "../events/emit.ts";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import { envelopeColumn } from "../../db/envelopes.ts";

/**
 * The only module that writes SQL on `revisions` and `revision_secrets` (leases and claims aside:
 * reconciler/store.ts). Every status change goes through `writeRevisionStatus`.
 */

/** What a list page needs of the query: statuses narrow; `remote` keeps listener-served (or other) ones. */
export interface RevisionPage {
  statuses?: readonly string[];
  remote?: boolean;
  limit: number;
  offset: number;
}

/**
 * A page of a deployment's revisions of the caller's workspace (the join is the tenancy check),
 * newest first (by sequence number), as the response body PostgreSQL assembles from the stored
 * records; `count` is the number on the page.
 */
export async function revisionPage(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  page: RevisionPage,
): Promise<{ body: string; count: number }> {
  const where: SQL[] = [sql`d.workspace_id = ${workspaceId}`, sql`r.deployment_id = ${deploymentId}`];
  if (page.statuses !== undefined) where.push(sql`r.status IN (${sqlList(page.statuses)})`);
  if (page.remote !== undefined) {
    where.push(page.remote ? sql`r.listener_id IS NOT NULL` : sql`r.listener_id IS NULL`);
  }
  const [row] = await rows<{ body: string; count: number }>(
    exec,
    sql`SELECT '{"resources":[' || coalesce(string_agg(p.record, ',' ORDER BY p.seq DESC), '')
               || '],"offset":' || (${page.offset}::int + count(*)) || '}' AS body, count(*)::int AS count
          FROM (SELECT r.record, r.seq FROM revisions r JOIN deployments d ON d.id = r.deployment_id
                 WHERE ${sql.join(where, sql` AND `)}
                 ORDER BY r.seq DESC LIMIT ${page.limit} OFFSET ${page.offset}) p`,
  );
  return row ?? { body: `{"resources":[],"offset":${page.offset}}`, count: 0 };
}

/** A revision's stored record (JSON text), when it is that deployment's, of that workspace. */
export async function findRevisionRecord(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<string | undefined> {
  const [row] = await rows<{ record: string }>(
    exec,
    sql`SELECT r.record FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE d.workspace_id = ${workspaceId} AND r.deployment_id = ${deploymentId} AND r.id = ${revisionId}`,
  );
  return row?.record;
}

/** The status of a revision of that deployment of that workspace (undefined: no such revision there). */
export async function revisionStatusIn(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionStatus | undefined> {
  const [row] = await rows<{ status: RevisionStatus }>(
    exec,
    sql`SELECT r.status FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE r.id = ${revisionId} AND d.id = ${deploymentId} AND d.workspace_id = ${workspaceId}`,
  );
  return row?.status;
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
  /** The revision whose secret rows it shares (unchanged secrets), or null when it gets its own. */
  secretsRevisionId: string | null;
  /** Creation time, also the time of its first status (QUEUED). */
  at: string;
}

/**
 * The statement that inserts a new revision, QUEUED: one part of the data-modifying CTE that
 * commits a revision (deployments/store.ts `commitRevision`), which gates it on its other parts.
 */
export function insertRevisionStatement(r: NewRevision, gate: SQL = sql`true`): SQL {
  const history: StatusChange[] = [{ status: "QUEUED", at: r.at }];
  const json = (v: unknown) => (v === null ? null : JSON.stringify(v));
  return sql`INSERT INTO revisions (id, deployment_id, seq, status, source, source_revision_config, resource_spec,
                               secret_references, build_config, listener_id, secrets_revision_id, status_history,
                               created_at, updated_at)
        SELECT ${r.id}::uuid, ${r.deploymentId}::uuid, ${r.seq}::int, 'QUEUED', ${r.source}::text,
               ${JSON.stringify(r.sourceRevisionConfig)}::jsonb, ${json(r.resourceSpec)}::jsonb,
               ${json(r.secretReferences)}::jsonb, ${JSON.stringify(r.buildConfig)}::jsonb, ${r.listenerId}::uuid,
               ${r.secretsRevisionId}::uuid,
               ${JSON.stringify(history)}::jsonb, ${r.at}::timestamptz, ${r.at}::timestamptz
         WHERE ${gate}`;
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
 * (and lease) read before, and emits `revision.status_changed` for each row moved, in the same
 * transaction. Returns how many rows moved.
 */
export async function writeRevisionStatus(
  exec: Executor,
  target: StatusTarget,
  w: StatusWrite,
): Promise<number> {
  const statement = revisionStatusStatement(target, w);
  if (statement === null) return 0;
  return inTransaction(exec, async (tx) => {
    const moved = await rows<MovedRevision>(
      tx,
      sql`WITH moved AS (${statement})
          SELECT m.id, m.deployment_id, m.status, m.status_message, d.name, d.workspace_id, d.organization_id
            FROM moved m JOIN deployments d ON d.id = m.deployment_id`,
    );
    await emitRevisionMoves(tx, moved);
    return moved.length;
  });
}

/**
 * `revision.status_changed` events as a data-modifying CTE's source (events/store.ts
 * `insertEventsFrom`): one per row of `moves` (id, status, status_message, ord), of the deployment
 * `deployment` (id, name, workspace_id, organization_id). Its data is what `emitRevisionMoves` sends.
 */
export function revisionMoveEvents(moves: SQL, deployment: SQL): SQL {
  return sql`SELECT d.organization_id, d.workspace_id, 'revision.status_changed'::text AS type, r.ord,
                    json_build_object('revision_id', r.id, 'deployment_id', d.id, 'deployment_name', d.name,
                                      'status', r.status, 'status_message', r.status_message,
                                      'tenant_id', d.workspace_id) AS data
               FROM ${moves} r, ${deployment} d`;
}

/** `revision.status_changed` for each row moved, in the transaction of the move. */
export async function emitRevisionMoves(exec: Executor, moved: readonly MovedRevision[]): Promise<void> {
  for (const m of moved) {
    await emit(exec, {
      organizationId: m.organization_id,
      workspaceId: m.workspace_id,
      type: "revision.status_changed",
      data: {
        revision_id: m.id,
        deployment_id: m.deployment_id,
        deployment_name: m.name,
        status: m.status,
        status_message: m.status_message,
      },
    });
  }
}

/**
 * Statuses written into the statement's text, not bound: a prepared statement's generic plan can
 * then use a partial index whose predicate names them (revisions_supersedable_idx for the skip of
 * a deployment's older revisions, which otherwise reads every revision the deployment ever had).
 */
function statusLiterals(statuses: readonly RevisionStatus[]): SQL {
  return sql.raw(
    statuses
      .map((st) => {
        if (!/^[A-Z_]+$/.test(st)) throw new Error(`not a revision status: ${st}`);
        return `'${st}'`;
      })
      .join(", "),
  );
}

/**
 * The statement `writeRevisionStatus` runs (returning the ids moved); null when no status may
 * move. A data-modifying CTE that folds it in may `gate` it on its other parts.
 */
export function revisionStatusStatement(target: StatusTarget, w: StatusWrite, gate?: SQL): SQL | null {
  for (const from of w.from) assertTransition(from, w.to);
  if (w.from.length === 0) return null;
  const at = w.at ?? new Date().toISOString();
  const change: StatusChange = { status: w.to, at, ...(w.message ? { message: w.message } : {}) };
  const sets: SQL[] = [
    sql`status = ${w.to}`,
    sql`status_history = status_history || ${JSON.stringify([change])}::jsonb`,
    sql`status_message = ${statusMessage(w.to, w.message)}`,
    w.at === undefined ? sql`updated_at = now()` : sql`updated_at = ${w.at}`,
  ];
  if (w.to === "INTERRUPTED") sets.push(sql`interrupt_requested = true`);
  const where: SQL[] = [sql`status IN (${statusLiterals(w.from)})`];
  if ("revisionId" in target) where.push(sql`id = ${target.revisionId}`);
  else where.push(sql`deployment_id = ${target.deploymentId}`, sql`id <> ${target.exceptRevisionId}`);
  if (w.lease) {
    where.push(sql`lease_owner = ${w.lease.owner}`);
    if (isTerminal(w.to)) sets.push(sql`lease_owner = NULL`, sql`lease_expires_at = NULL`);
    else sets.push(sql`lease_expires_at = ${fromNow(w.lease.leaseMs)}`);
  }
  if (gate) where.push(gate);
  return sql`UPDATE revisions SET ${sql.join(sets, sql`, `)} WHERE ${sql.join(where, sql` AND `)}
             RETURNING id, deployment_id, status, status_message`;
}

/** Revision rows a status write moved, with what their events name. */
export interface MovedRevision {
  id: string;
  deployment_id: string;
  status: RevisionStatus;
  status_message: string | null;
  name: string;
  workspace_id: string;
  organization_id: string;
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

/**
 * A secret as stored: its value is an envelope bound to the deployment and name, or, for rows
 * written before migration 0008 (`deployment_id` null), to the row id (deployments/secrets.ts).
 */
export interface StoredSecret {
  id: string;
  /** The revision the row belongs to: the one read, or the earlier one it shares the rows of. */
  revision_id: string;
  name: string;
  value_enc: string;
  deployment_id: string | null;
}

/** A secret to insert: its envelope, already bound to the deployment and name. */
export interface SealedSecret {
  name: string;
  value_enc: string;
}

/**
 * The statement inserting a new revision's secrets in their order (part of `commitRevision`'s
 * CTE), with the row ids given: the writer knows the rows it wrote without reading them back.
 */
export function insertSecretsStatement(
  revisionId: string,
  deploymentId: string,
  secrets: (SealedSecret & { id: string })[],
  gate: SQL = sql`true`,
): SQL {
  return sql`INSERT INTO revision_secrets (id, revision_id, deployment_id, name, value_enc, position)
      SELECT s.id, ${revisionId}::uuid, ${deploymentId}::uuid, s.name, s.value_enc, s.position
        FROM jsonb_to_recordset(${JSON.stringify(secrets.map(({ id, name, value_enc }, position) => ({ id, name, value_enc, position })))}::jsonb)
             AS s(id uuid, name text, value_enc text, position int)
       WHERE ${gate}`;
}

/** The rows holding a revision's secrets: its own, or those of the revision it shares them with. */
export const secretsOwner = (revision: SQL) => sql`coalesce(${revision}.secrets_revision_id, ${revision}.id)`;

/** A revision's secrets in their order (its own rows or the ones it shares, migration 0022). */
export function secretRows(exec: Reader, revisionId: string): Promise<StoredSecret[]> {
  return rows<StoredSecret>(
    exec,
    sql`SELECT s.id, s.revision_id, s.name, s.value_enc, s.deployment_id
          FROM revisions r JOIN revision_secrets s ON s.revision_id = ${secretsOwner(sql`r`)}
         WHERE r.id = ${revisionId} ORDER BY s.position`,
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

/** The encrypted columns of this store's tables, for key rotation. */
export const revisionEnvelopes = (exec: Executor): EnvelopeColumn[] => [
  envelopeColumn(
    exec,
    revisionSecrets,
    revisionSecrets.valueEnc,
    // secretContextId, in SQL.
    sql`coalesce(${revisionSecrets.deploymentId}::text || '/' || ${revisionSecrets.name}, ${revisionSecrets.id}::text)`,
  ),
];

/**
 * The id a revision secret's encryption context names: `<deployment id>/<name>` (rows since
 * migration 0008, so a new revision copies an unchanged envelope as is), or the row id (older
 * rows, deployment_id null). `revisionEnvelopes` states the same rule in SQL, for rotation.
 */
export function secretContextId(row: { id: string; name: string; deployment_id: string | null }): string {
  return row.deployment_id === null ? row.id : `${row.deployment_id}/${row.name}`;
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
  health_path: string | null;
  workspace_id: string;
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
               r.source_revision_config, r.image_ref, r.health_path, d.workspace_id, r.resource_spec,
               r.secret_references
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
  | {
      remote_state: string | null;
      remote_reason: string | null;
      listener_id: string | null;
      image_ref: string | null;
    }
  | undefined
> {
  const [row] = await rows<{
    remote_state: string | null;
    remote_reason: string | null;
    listener_id: string | null;
    image_ref: string | null;
  }>(
    exec,
    sql`SELECT remote_state, remote_reason, listener_id, image_ref FROM revisions WHERE id = ${revisionId}`,
  );
  return row;
}

/**
 * The image a revision was built into and pushed as (sources that are not images, run by a
 * listener), and the health path its app config names.
 */
export async function recordImageRef(
  exec: Executor,
  revisionId: string,
  imageRef: string,
  healthPath: string | null,
): Promise<void> {
  await exec.execute(
    sql`UPDATE revisions SET image_ref = ${imageRef}, health_path = ${healthPath} WHERE id = ${revisionId}`,
  );
}
