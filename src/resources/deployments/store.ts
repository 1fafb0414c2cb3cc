import { type SQL, sql } from "drizzle-orm";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { isoSql } from "../../db/sql.ts";
import { assertDeploymentTransition, type DeploymentStatus } from "../../reconciler/states.ts";
import type { Deployment, DeploymentType, SecretReference, Source } from "./schema.ts";

/**
 * The only module that writes SQL on `deployments` and `idempotency_keys` (the reconciler's
 * teardown claims aside: reconciler/store.ts). Deployment status changes go through
 * `moveDeployment`, which checks the transitions table.
 */

/** One deployment row joined with what its record shows of the latest revision. */
export interface DeploymentRow {
  id: string;
  name: string;
  source: Source;
  deployment_type: DeploymentType;
  source_config: Record<string, unknown>;
  image_version: string | null;
  status: Deployment["status"];
  latest_revision_id: string | null;
  active_revision_id: string | null;
  workspace_id: string;
  created_at: string;
  updated_at: string;
  rev_config: Record<string, unknown> | null;
  rev_resource_spec: Record<string, unknown> | null;
  rev_secret_references: SecretReference[] | null;
  secret_names: string[] | null;
}

/** The columns a Deployment record needs: row `d`, latest revision `r`, secret names. */
const RECORD_COLUMNS = `d.id, d.name, d.source, d.deployment_type, d.source_config,
       d.image_version, d.status, d.latest_revision_id, d.active_revision_id, d.workspace_id,
       ${isoSql("d.created_at")} AS created_at, ${isoSql("d.updated_at")} AS updated_at,
       r.source_revision_config AS rev_config, r.resource_spec AS rev_resource_spec,
       r.secret_references AS rev_secret_references,
       (SELECT json_agg(s.name ORDER BY s.position) FROM revision_secrets s
         WHERE s.revision_id = d.latest_revision_id) AS secret_names`;

/** Everything a Deployment record needs, in one statement: row, latest revision, secret names. */
export async function findDeploymentRow(
  exec: Reader,
  workspaceId: string,
  id: string,
): Promise<DeploymentRow | undefined> {
  const [row] = await rows<DeploymentRow>(
    exec,
    sql`SELECT ${sql.raw(RECORD_COLUMNS)}
          FROM deployments d LEFT JOIN revisions r ON r.id = d.latest_revision_id
         WHERE d.id = ${id} AND d.workspace_id = ${workspaceId}`,
  );
  return row;
}

/**
 * One page of records. The page's ids are chosen first — an index-only scan over the list order
 * (the list indexes lead with workspace and filter columns), so skipped rows cost an index entry,
 * not a heap fetch and a join — and only the page's rows are read and joined with their revisions.
 */
export function selectDeploymentRows(exec: Reader, where: SQL, limit: number, offset: number) {
  return rows<DeploymentRow>(
    exec,
    sql`SELECT ${sql.raw(RECORD_COLUMNS)}
          FROM (SELECT d.id FROM deployments d WHERE ${where}
                 ORDER BY d.created_at DESC, d.id DESC LIMIT ${limit} OFFSET ${offset}) page
          JOIN deployments d ON d.id = page.id
          LEFT JOIN revisions r ON r.id = d.latest_revision_id
         ORDER BY d.created_at DESC, d.id DESC`,
  );
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
}

async function readForWrite(exec: Reader, workspaceId: string, id: string, lock: boolean) {
  const [row] = await rows<LockedDeployment>(
    exec,
    sql`SELECT id, organization_id, name, source, deployment_type, source_config, image_version, status,
               latest_revision_id, revision_count, pending_revision, pending_secrets_enc
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
export async function insertDeployment(exec: Executor, d: NewDeployment): Promise<void> {
  await exec.execute(
    sql`INSERT INTO deployments (id, organization_id, workspace_id, name, source, deployment_type, source_config,
                                 image_version, remote_reconciled, pending_revision, pending_secrets_enc,
                                 created_at, updated_at)
        VALUES (${d.id}, ${d.organizationId}, ${d.workspaceId}, ${d.name}, ${d.source}, ${d.deploymentType},
                ${JSON.stringify(d.sourceConfig)}::jsonb, ${d.imageVersion}, ${d.remoteReconciled},
                ${d.pendingRevision}::jsonb, ${d.pendingSecretsEnc}, ${d.at}, ${d.at})`,
  );
}

/** The fields a PATCH changes without a revision. */
export async function updateInPlace(
  exec: Executor,
  id: string,
  sourceConfig: Record<string, unknown>,
  imageVersion: string | null,
  at: string,
): Promise<void> {
  await exec.execute(
    sql`UPDATE deployments SET source_config = ${JSON.stringify(sourceConfig)}::jsonb,
               image_version = ${imageVersion}, updated_at = ${at}
         WHERE id = ${id}`,
  );
}

/** The deployment's latest revision is now `revisionId`, its `seq`-th; what was pending is spent. */
export async function pointAtRevision(
  exec: Executor,
  id: string,
  revisionId: string,
  seq: number,
  at: string,
): Promise<void> {
  await exec.execute(
    sql`UPDATE deployments
           SET revision_count = ${seq}, latest_revision_id = ${revisionId}, updated_at = ${at},
               pending_revision = NULL, pending_secrets_enc = NULL
         WHERE id = ${id}`,
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
  const done = await rows<{ id: string }>(
    exec,
    sql`UPDATE deployments SET status = ${to}, updated_at = ${at === undefined ? sql`now()` : sql`${at}`}
         WHERE id = ${id} AND status = ${from} RETURNING id`,
  );
  return done.length === 1;
}

/**
 * Removes a deployment that is AWAITING_DELETE, with its revisions, secrets and taggings (the
 * foreign keys cascade); its tracing project stays, detached. Returns whether a row was removed.
 */
export async function removeDeployment(exec: Executor, id: string): Promise<boolean> {
  const removed = await rows<{ id: string }>(
    exec,
    sql`DELETE FROM deployments WHERE id = ${id} AND status = 'AWAITING_DELETE' RETURNING id`,
  );
  return removed.length > 0;
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

/** Stores the database password envelope unless one is stored (the first writer wins), then reads it. */
export async function databasePasswordEnc(exec: Executor, id: string, fresh: string): Promise<string | null> {
  await exec.execute(
    sql`UPDATE deployments SET database_password_enc = ${fresh}
         WHERE id = ${id} AND database_password_enc IS NULL`,
  );
  const [row] = await rows<{ enc: string | null }>(
    exec,
    sql`SELECT database_password_enc AS enc FROM deployments WHERE id = ${id}`,
  );
  return row?.enc ?? null;
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
  body: unknown,
): Promise<void> {
  await tx.execute(
    sql`UPDATE idempotency_keys SET status_code = ${statusCode}, response = ${JSON.stringify(body)}::jsonb
         WHERE workspace_id = ${workspaceId} AND key = ${key}`,
  );
}

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
