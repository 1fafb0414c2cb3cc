// Why over 300 lines: every statement on `deployments` lives here by rule (test/db/sql-ownership.test.ts).
import { type SQL, sql } from "drizzle-orm";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import { ANNOUNCED_SETTING, EVENTS_CHANNEL, RECORDS_CHANNEL, WORK_CHANNEL } from "../../db/channels.ts";
import {
  type Database,
  type Executor,
  inTransaction,
  type Reader,
  rows,
  type Transaction,
} from "../../db/client.ts";
import { envelopeColumn } from "../../db/envelopes.ts";
import { deployments } from "../../db/schema/deployments.ts";
import { likeEscape, sqlList, uuidList } from "../../db/sql.ts";
import { assertDeploymentTransition, type DeploymentStatus } from "../../reconciler/states.ts";
import { auditInTransaction, auditNotWritten } from "../audit-log/scope.ts";
import { emit } from "../events/emit.ts";
import { insertEventsFrom } from "../events/store.ts";
import { revisionMoveEvents, type StoredSecret, secretsOwner } from "../revisions/store.ts";
import { TAGGINGS_COUNTED, type TagValueGroup } from "../tags/store.ts";
import { deliveriesFor } from "../webhooks/store.ts";
import type { DeploymentType, SecretReference, Source } from "./schema.ts";

/**
 * The only module that writes SQL on `deployments` and `idempotency_keys` (the reconciler's
 * teardown claims aside: reconciler/store.ts). Deployment status changes go through
 * `moveDeployment`, which checks the transitions table. Creating, moving and removing a deployment
 * emit their events (events/emit.ts) in the same transaction.
 */

/** A deployment's stored record (JSON text, secrets masked) and its ETag. */
export interface StoredRecord {
  record: string;
  etag: string;
}

/** A written record with the row version the write left (PatchState.version). */
export interface WrittenRecord extends StoredRecord {
  version: string;
}

/** The record and ETag of a deployment of the workspace, as stored (migration 0008). */
export async function findDeploymentRecord(
  exec: Reader,
  workspaceId: string,
  id: string,
): Promise<StoredRecord | undefined> {
  const [row] = await rows<StoredRecord>(
    exec,
    sql`SELECT record, slipway_etag(record) AS etag FROM deployments WHERE id = ${id} AND workspace_id = ${workspaceId}`,
  );
  return row;
}

/** The list filters, parsed (list.ts); every one given must hold. */
export interface DeploymentFilter {
  name?: string;
  /** Lower-case substring of the name. */
  nameContains?: string;
  statuses?: readonly string[];
  /** The latest revision's status is one of these. */
  latestRevisionStatuses?: readonly string[];
  remoteReconciled?: boolean;
  imageVersion?: string;
  deploymentType?: string;
  ids?: readonly string[];
  /** Tag value ids grouped by their key: a deployment has one of each group's values. */
  tagGroups?: readonly TagValueGroup[];
}

function filterSql(workspaceId: string, f: DeploymentFilter): SQL {
  const where: SQL[] = [sql`d.workspace_id = ${workspaceId}`];
  if (f.name !== undefined) where.push(sql`d.name = ${f.name}`);
  // Same expression as the pg_trgm index on lower(name).
  if (f.nameContains) where.push(sql`lower(d.name) LIKE '%' || ${likeEscape(f.nameContains)} || '%'`);
  if (f.statuses !== undefined) where.push(sql`d.status IN (${sqlList(f.statuses)})`);
  if (f.latestRevisionStatuses !== undefined)
    where.push(sql`d.latest_revision_status IN (${sqlList(f.latestRevisionStatuses)})`);
  if (f.remoteReconciled !== undefined) where.push(sql`d.remote_reconciled = ${f.remoteReconciled}`);
  if (f.imageVersion !== undefined) where.push(sql`d.image_version = ${f.imageVersion}`);
  if (f.deploymentType !== undefined) where.push(sql`d.deployment_type = ${f.deploymentType}`);
  if (f.ids !== undefined) where.push(sql`d.id IN (${uuidList(f.ids)})`);
  // One condition per tag key (never a GROUP BY over all taggings). A sparse value (fewer taggings
  // than counted) is where the query starts: its deployments by primary key, then sorted — walking
  // the list order and probing each row would visit ~20/frequency rows (420k for 1 row in 10k, 0.5 s
  // at 1M). The other keys, and dense values, are an EXISTS probe of deployment_tags per candidate.
  const groups = f.tagGroups ?? [];
  const sparsest = groups.reduce<TagValueGroup | undefined>(
    (best, g) => (g.taggings < TAGGINGS_COUNTED && (!best || g.taggings < best.taggings) ? g : best),
    undefined,
  );
  for (const group of groups) {
    const values = uuidList(group.ids);
    where.push(
      group === sparsest
        ? sql`d.id = ANY (ARRAY(SELECT dt.deployment_id FROM deployment_tags dt WHERE dt.tag_value_id IN (${values})))`
        : sql`EXISTS (SELECT 1 FROM deployment_tags dt
                       WHERE dt.deployment_id = d.id AND dt.tag_value_id IN (${values}))`,
    );
  }
  return sql.join(where, sql` AND `);
}

/**
 * One page of records as the response body, assembled by PostgreSQL from the stored records:
 * `{"resources":[…],"offset":N}`. The page's ids are chosen first — an index scan over the list
 * order (the list indexes lead with workspace and filter columns) — and only the page's rows are read.
 */
export async function deploymentPage(
  exec: Reader,
  workspaceId: string,
  filter: DeploymentFilter,
  limit: number,
  offset: number,
): Promise<string> {
  const [row] = await rows<{ body: string }>(exec, pageSql(workspaceId, filter, limit, offset));
  return row?.body ?? `{"resources":[],"offset":${offset}}`;
}

function pageSql(workspaceId: string, filter: DeploymentFilter, limit: number, offset: number): SQL {
  return sql`SELECT '{"resources":[' || coalesce(string_agg(d.record, ',' ORDER BY d.created_at DESC, d.id DESC), '')
               || '],"offset":' || (${offset}::int + count(*)) || '}' AS body
          FROM (SELECT d.id FROM deployments d WHERE ${filterSql(workspaceId, filter)}
                 ORDER BY d.created_at DESC, d.id DESC LIMIT ${limit} OFFSET ${offset}) page
          JOIN deployments d ON d.id = page.id`;
}

/** The plan of a list query as it ran, with its buffers (the scale bench prints it for every filter). */
export async function explainDeploymentPage(
  exec: Reader,
  workspaceId: string,
  filter: DeploymentFilter,
  limit: number,
  offset: number,
): Promise<string> {
  const plan = await rows<{ "QUERY PLAN": string }>(
    exec,
    sql`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${pageSql(workspaceId, filter, limit, offset)}`,
  );
  return plan.map((p) => p["QUERY PLAN"]).join("\n");
}

export async function deploymentExists(exec: Reader, workspaceId: string, id: string): Promise<boolean> {
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM deployments WHERE id = ${id} AND workspace_id = ${workspaceId}`,
  );
  return found.length > 0;
}

/** The deployment row as a write sees it (locked for the rest of the transaction by `lockDeployment`). */
export interface LockedDeployment {
  id: string;
  organization_id: string;
  name: string;
  source: Source;
  deployment_type: DeploymentType;
  source_config: Record<string, unknown>;
  image_version: string | null;
  status: string;
  latest_revision_id: string | null;
  revision_count: number;
  /** What a create without an artifact was given, for the first revision (see 0002_deployments.sql). */
  pending_revision: {
    source_revision_config?: Record<string, unknown>;
    resource_spec?: Record<string, unknown> | null;
    secret_names?: string[];
  } | null;
  pending_secrets_enc: string | null;
  etag: string;
}

async function readForWrite(exec: Reader, workspaceId: string, id: string, lock: boolean) {
  const [row] = await rows<LockedDeployment>(
    exec,
    sql`SELECT id, organization_id, name, source, deployment_type, source_config, image_version, status,
               latest_revision_id, revision_count, pending_revision, pending_secrets_enc, slipway_etag(record) AS etag
          FROM deployments WHERE id = ${id} AND workspace_id = ${workspaceId}${lock ? sql` FOR UPDATE` : sql``}`,
  );
  return row;
}

/** `SELECT … FOR UPDATE`: revision-creating writes of one deployment run one after the other. */
export function lockDeployment(exec: Executor, workspaceId: string, id: string) {
  return readForWrite(exec, workspaceId, id, true);
}

/** The same row without the lock (a check before the transaction). */
export function peekDeployment(exec: Reader, workspaceId: string, id: string) {
  return readForWrite(exec, workspaceId, id, false);
}

/**
 * What the record shows of the latest revision (deployments.latest_revision_content): the
 * secrets as the record lists them, values masked.
 */
export interface LatestContent {
  source_revision_config: Record<string, unknown>;
  resource_spec: Record<string, unknown> | null;
  secret_references: SecretReference[] | null;
  secrets: { name: string; value: string }[];
}

/** The latest revision as a PATCH builds on it, with its stored secrets (envelopes, not opened). */
export interface LatestRevision extends Omit<LatestContent, "secrets"> {
  id: string;
  secret_names: string[];
  secrets: StoredSecret[];
}

/** A PATCH's state: the deployment row with its version, the latest revision and its secrets. */
export interface PatchState {
  deployment: LockedDeployment;
  /**
   * The row version read (its xmin): every change to the row makes a new one, so a write guarded
   * by it (`ifVersion`) changes nothing when anything changed the deployment since this read.
   */
  version: string;
  latest: LatestRevision | null;
}

/**
 * A PATCH's one read: the deployment row (locked when `lock`), its latest revision and that
 * revision's secrets, in one statement.
 */
export async function readPatchState(
  exec: Reader,
  workspaceId: string,
  id: string,
  lock: boolean,
): Promise<PatchState | undefined> {
  const query = sql`SELECT d.xmin::text AS version, d.id, d.organization_id, d.name, d.source, d.deployment_type, d.source_config,
               d.image_version, d.status, d.latest_revision_id, d.revision_count, d.pending_revision,
               d.pending_secrets_enc, slipway_etag(d.record) AS etag,
               CASE WHEN r.id IS NULL THEN NULL ELSE json_build_object(
                 'id', r.id, 'source_revision_config', r.source_revision_config,
                 'resource_spec', r.resource_spec, 'secret_references', r.secret_references,
                 'secrets', coalesce((SELECT json_agg(json_build_object('id', s.id, 'revision_id', s.revision_id,
                                        'name', s.name, 'value_enc', s.value_enc, 'deployment_id', s.deployment_id)
                                        ORDER BY s.position)
                                        FROM revision_secrets s WHERE s.revision_id = ${secretsOwner(sql`r`)}),
                                      '[]'::json)) END AS latest
          FROM deployments d LEFT JOIN revisions r ON r.id = d.latest_revision_id
         WHERE d.id = ${id} AND d.workspace_id = ${workspaceId}${lock ? sql` FOR UPDATE OF d` : sql``}`;
  type Row = LockedDeployment & { version: string; latest: Omit<LatestRevision, "secret_names"> | null };
  const [row] = await rows<Row>(exec, query);
  if (!row) return undefined;
  const { latest, version, ...deployment } = row;
  return {
    deployment,
    version,
    latest: latest && { ...latest, secret_names: latest.secrets.map((s) => s.name) },
  };
}

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

// ── what the reconciler records ────────────────────────────────────────────────────────────

/**
 * The revision now serves the deployment at `url`; an image revision also names its version
 * (null: the image names none), other revisions leave it as it was (undefined).
 */
export async function activateRevision(
  exec: Executor,
  id: string,
  revisionId: string,
  url: string,
  imageVersion: string | null | undefined,
): Promise<void> {
  await exec.execute(
    sql`UPDATE deployments
           SET active_revision_id = ${revisionId},
               source_config = jsonb_set(source_config, '{custom_url}', to_jsonb(${url}::text)),
               updated_at = now()
         WHERE id = ${id}`,
  );
  if (imageVersion !== undefined) {
    await exec.execute(sql`UPDATE deployments SET image_version = ${imageVersion} WHERE id = ${id}`);
  }
}

/** The database a deployment's app uses (reconciler/app-database.ts provisions it). */
export async function setDatabaseName(exec: Executor, id: string, name: string): Promise<void> {
  await exec.execute(sql`UPDATE deployments SET database_name = ${name} WHERE id = ${id}`);
}

/** Columns holding the envelope of a password the reconciler generates for a deployment's service. */
const PASSWORD_COLUMNS = { database: sql`database_password_enc`, redis: sql`redis_password_enc` } as const;

/** Stores a service's password envelope unless one is stored (the first writer wins), then reads it. */
export async function servicePasswordEnc(
  exec: Executor,
  id: string,
  service: keyof typeof PASSWORD_COLUMNS,
  fresh: string,
): Promise<string | null> {
  const column = PASSWORD_COLUMNS[service];
  await exec.execute(sql`UPDATE deployments SET ${column} = ${fresh} WHERE id = ${id} AND ${column} IS NULL`);
  const [row] = await rows<{ enc: string | null }>(
    exec,
    sql`SELECT ${column} AS enc FROM deployments WHERE id = ${id}`,
  );
  return row?.enc ?? null;
}

/** The apps router passed it a request at `at` (kept when an earlier time is reported later). */
export async function recordLastRequest(exec: Executor, id: string, at: string): Promise<void> {
  await exec.execute(
    sql`UPDATE deployments SET last_request_at = GREATEST(COALESCE(last_request_at, ${at}::timestamptz), ${at}::timestamptz)
         WHERE id = ${id}`,
  );
}

/** Sets why its database is over its storage (null: within it); true when that changed. */
export async function setStorageNote(exec: Executor, id: string, note: string | null): Promise<boolean> {
  const done = await rows<{ id: string }>(
    exec,
    sql`UPDATE deployments SET storage_note = ${note}
         WHERE id = ${id} AND storage_note IS DISTINCT FROM ${note} RETURNING id`,
  );
  return done.length === 1;
}

// ── idempotency keys of POST /v2/deployments ─────────────────────────────────────────────────

/** Claims the key (new, or older than `window`); false when a live row holds it (idempotency.ts). */
export async function claimKey(
  tx: Executor,
  workspaceId: string,
  key: string,
  hash: string,
  window: string,
): Promise<boolean> {
  const claimed = await rows<{ key: string }>(
    tx,
    sql`INSERT INTO idempotency_keys (workspace_id, key, request_hash) VALUES (${workspaceId}, ${key}, ${hash})
        ON CONFLICT (workspace_id, key) DO UPDATE
          SET request_hash = EXCLUDED.request_hash, status_code = NULL, response = NULL, created_at = now()
          WHERE idempotency_keys.created_at < now() - ${window}::interval
        RETURNING key`,
  );
  return claimed.length > 0;
}

export async function storedKey(tx: Executor, workspaceId: string, key: string) {
  const [prior] = await rows<{ request_hash: string; status_code: number | null; response: unknown }>(
    tx,
    sql`SELECT request_hash, status_code, response FROM idempotency_keys
         WHERE workspace_id = ${workspaceId} AND key = ${key}`,
  );
  return prior;
}

export async function saveKeyResponse(
  tx: Executor,
  workspaceId: string,
  key: string,
  statusCode: number,
  json: string,
): Promise<void> {
  await tx.execute(
    sql`UPDATE idempotency_keys SET status_code = ${statusCode}, response = ${json}::jsonb
         WHERE workspace_id = ${workspaceId} AND key = ${key}`,
  );
}

/** The encrypted columns of this store's tables, for key rotation. */
export const deploymentEnvelopes = (exec: Executor): EnvelopeColumn[] => [
  envelopeColumn(exec, deployments, deployments.pendingSecretsEnc),
  envelopeColumn(exec, deployments, deployments.databasePasswordEnc),
  envelopeColumn(exec, deployments, deployments.redisPasswordEnc),
];
// ── deployments served by listeners ──────────────────────────────────────────────────────────

export interface ListenerDeploymentRow {
  id: string;
  name: string;
  namespace: string | null;
  status: DeploymentStatus;
}

/** The deployments a listener serves (every row still there, AWAITING_DELETE included). */
export function listenerDeploymentRows(exec: Reader, listenerId: string): Promise<ListenerDeploymentRow[]> {
  return rows<ListenerDeploymentRow>(
    exec,
    sql`SELECT id, name, source_config->'listener_config'->>'k8s_namespace' AS namespace, status
          FROM deployments WHERE source_config->>'listener_id' = ${listenerId.toLowerCase()}
         ORDER BY name, id`,
  );
}

/** The listener that serves a deployment, if any. */
export async function listenerOfDeployment(exec: Reader, id: string): Promise<string | undefined> {
  const [row] = await rows<{ listener_id: string | null }>(
    exec,
    sql`SELECT source_config->>'listener_id' AS listener_id FROM deployments WHERE id = ${id}`,
  );
  return row?.listener_id ?? undefined;
}
