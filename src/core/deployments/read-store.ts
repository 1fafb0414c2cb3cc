import { sql } from "drizzle-orm";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import type { DeploymentType, SecretReference, Source } from "../model.ts";
import { type StoredSecret, secretsOwner } from "../revisions/secrets-store.ts";
import type { DeploymentStatus } from "../revisions/states.ts";

/**
 * Reading deployments: a record as stored, a row as a write sees it (locked or not), a PATCH's
 * state, and the deployments a listener serves. Writes are in write-store.ts and runtime-store.ts.
 */

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
