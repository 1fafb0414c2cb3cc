import { sql } from "drizzle-orm";
import { CLAIMABLE, type DeploymentStatus, type RevisionStatus } from "../core/revisions/states.ts";
import { LEADER_LOCK } from "../db/channels.ts";
import { type Database, type Executor, type Reader, rows } from "../db/client.ts";
import { fromNow, sqlList, uuidList } from "../db/sql.ts";
import type { DeploymentType } from "../runtimes/interface.ts";
import { runtimeNameOf } from "./runtimes.ts";
import type { RevisionWork } from "./work.ts";

/**
 * The reconciler's SQL: leases on revisions and teardown claims on deployments (the only writes
 * on those tables outside their resources' stores, and only of the lease columns; the claim of
 * revisions is in claims.ts), what a worker
 * reads of a revision, and the leader lock. Status and other columns go through the stores of
 * resources/deployments and resources/revisions.
 */

/** Extends a lease; false when the revision was taken over or ended (interrupted, skipped). */
export async function renewLease(
  exec: Executor,
  id: string,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  const done = await rows<{ id: string }>(
    exec,
    sql`UPDATE revisions SET lease_expires_at = ${fromNow(leaseMs)}
         WHERE id = ${id} AND lease_owner = ${owner} AND status IN (${sqlList(CLAIMABLE)})
         RETURNING id`,
  );
  return done.length === 1;
}

/** Gives a lease back; `retryInMs` keeps others off it until then (back-off after a fault). */
export async function releaseLease(exec: Executor, id: string, owner: string, retryInMs = 0): Promise<void> {
  await exec.execute(
    sql`UPDATE revisions
           SET lease_owner = NULL,
               lease_expires_at = CASE WHEN ${retryInMs}::int > 0 THEN ${fromNow(retryInMs)} ELSE NULL END
         WHERE id = ${id} AND lease_owner = ${owner}`,
  );
}

/** Of the given revisions, those no longer leased to `owner` in a status that needs work. */
export async function lostRevisions(exec: Reader, ids: string[], owner: string): Promise<string[]> {
  if (ids.length === 0) return [];
  const held = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM revisions
         WHERE id IN (${uuidList(ids)}) AND lease_owner = ${owner} AND status IN (${sqlList(CLAIMABLE)})`,
  );
  const keep = new Set(held.map((r) => r.id));
  return ids.filter((id) => !keep.has(id));
}

/** Whether a worker (here or elsewhere) still holds a live lease on one of the deployment's revisions. */
export async function leaseHeld(exec: Reader, deploymentId: string): Promise<boolean> {
  const busy = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM revisions WHERE deployment_id = ${deploymentId} AND lease_owner IS NOT NULL
           AND lease_expires_at > now() LIMIT 1`,
  );
  return busy.length > 0;
}

export interface ClaimedDeletion {
  id: string;
  database_name: string | null;
}

/** Leases deployments waiting for teardown, the same way as revisions. */
export async function claimDeletions(
  exec: Executor,
  owner: string,
  leaseMs: number,
  limit: number,
): Promise<ClaimedDeletion[]> {
  if (limit <= 0) return [];
  return rows<ClaimedDeletion>(
    exec,
    sql`UPDATE deployments SET reconcile_owner = ${owner}, reconcile_expires_at = ${fromNow(leaseMs)}
         WHERE id IN (
           SELECT id FROM deployments
            WHERE status = 'AWAITING_DELETE'
              AND (reconcile_expires_at IS NULL OR reconcile_expires_at < now())
            ORDER BY updated_at
            FOR UPDATE SKIP LOCKED
            LIMIT ${limit})
           AND (reconcile_expires_at IS NULL OR reconcile_expires_at < now())
         RETURNING id, database_name`,
  );
}

/** Hands a deletion back to be retried after `retryInMs`. */
export async function deferDeletion(
  exec: Executor,
  id: string,
  owner: string,
  retryInMs: number,
): Promise<void> {
  await exec.execute(
    sql`UPDATE deployments SET reconcile_owner = NULL, reconcile_expires_at = ${fromNow(retryInMs)}
         WHERE id = ${id} AND reconcile_owner = ${owner}`,
  );
}

interface WorkRow {
  id: string;
  deployment_id: string;
  seq: number;
  status: RevisionStatus;
  source: string;
  source_revision_config: Record<string, unknown>;
  resource_spec: Record<string, unknown> | null;
  secret_references: unknown;
  build_config: Record<string, unknown>;
  attempts: number;
  deployment_name: string;
  deployment_type: DeploymentType;
  deployment_status: DeploymentStatus;
  deployment_source_config: Record<string, unknown>;
  organization_id: string;
  workspace_id: string;
  active_revision_id: string | null;
  listener_id: string | null;
}

/** A revision with what the reconciler needs of its deployment, read in one query. */
export async function loadWork(exec: Reader, revisionId: string): Promise<RevisionWork | undefined> {
  const [r] = await rows<WorkRow>(
    exec,
    sql`SELECT r.id, r.deployment_id, r.seq, r.status, r.source, r.source_revision_config, r.resource_spec,
               r.secret_references, r.build_config, r.attempts, r.listener_id, d.name AS deployment_name, d.deployment_type, d.status AS deployment_status,
               d.source_config AS deployment_source_config, d.organization_id, d.workspace_id, d.active_revision_id
          FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE r.id = ${revisionId}`,
  );
  if (!r) return undefined;
  return {
    id: r.id,
    deploymentId: r.deployment_id,
    seq: r.seq,
    status: r.status,
    source: r.source,
    runtime: runtimeNameOf(r),
    sourceRevisionConfig: r.source_revision_config ?? {},
    resourceSpec: r.resource_spec,
    secretReferences: r.secret_references,
    buildConfig: r.build_config ?? {},
    attempts: r.attempts,
    deploymentName: r.deployment_name,
    deploymentType: r.deployment_type,
    deploymentStatus: r.deployment_status,
    deploymentSourceConfig: r.deployment_source_config ?? {},
    organizationId: r.organization_id,
    workspaceId: r.workspace_id,
    activeRevisionId: r.active_revision_id,
  };
}

// ── what a worker reads of deployments ─────────────────────────────────────────────────────────

export async function activeRevisionOf(exec: Reader, id: string): Promise<string | null> {
  const [row] = await rows<{ active_revision_id: string | null }>(
    exec,
    sql`SELECT active_revision_id FROM deployments WHERE id = ${id}`,
  );
  return row?.active_revision_id ?? null;
}

export interface ActiveDeployment {
  id: string;
  status: DeploymentStatus;
  active_revision_id: string;
}

/**
 * Deployments with an active revision that are not being deleted and run on this server (what a
 * restart brings back; a listener's keep running on its cluster).
 */
export function activeDeployments(exec: Reader): Promise<ActiveDeployment[]> {
  return rows<ActiveDeployment>(
    exec,
    sql`SELECT id, status, active_revision_id FROM deployments
         WHERE active_revision_id IS NOT NULL AND status <> 'AWAITING_DELETE' AND NOT remote_reconciled`,
  );
}

/** Of all deployments, the ones whose health decides between READY and UNKNOWN, with their listener. */
export function checkedDeployments(
  exec: Reader,
): Promise<
  { id: string; status: "READY" | "UNKNOWN"; active_revision_id: string; listener_id: string | null }[]
> {
  return rows(
    exec,
    sql`SELECT id, status, active_revision_id, source_config->>'listener_id' AS listener_id FROM deployments
         WHERE active_revision_id IS NOT NULL AND status IN ('READY', 'UNKNOWN')`,
  );
}

/**
 * READY deployments, not `prod`, that neither served a request (last_request_at) nor changed
 * (updated_at: deployed, renamed, moved) for `afterS` seconds.
 */
export function idleDeployments(
  exec: Reader,
  afterS: number,
): Promise<{ id: string; active_revision_id: string }[]> {
  return rows(
    exec,
    sql`SELECT id, active_revision_id FROM deployments
         WHERE status = 'READY' AND active_revision_id IS NOT NULL AND deployment_type <> 'prod'
           AND GREATEST(COALESCE(last_request_at, updated_at), updated_at)
               < now() - make_interval(secs => ${afterS})`,
  );
}

/** Deployments with their own database and an active revision: its `db_storage_gi` and the last note. */
export function databaseStorage(exec: Reader): Promise<
  {
    id: string;
    database_name: string;
    active_revision_id: string;
    storage_gi: unknown;
    storage_note: string | null;
  }[]
> {
  return rows(
    exec,
    sql`SELECT d.id, d.database_name, d.active_revision_id, r.resource_spec -> 'db_storage_gi' AS storage_gi,
               d.storage_note
          FROM deployments d JOIN revisions r ON r.id = d.active_revision_id
         WHERE d.database_name IS NOT NULL AND d.status <> 'AWAITING_DELETE'`,
  );
}

/** Status and active revision of some deployments (missing ones were removed). */
export function deploymentStates(
  exec: Reader,
  ids: readonly string[],
): Promise<{ id: string; status: DeploymentStatus; active_revision_id: string | null }[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return rows(
    exec,
    sql`SELECT id, status, active_revision_id FROM deployments WHERE id IN (${uuidList(ids)})`,
  );
}

/** Runs `fn` in a transaction only when this process is the leader (holds the advisory lock) now. */
export async function asLeader(db: Database, fn: (tx: Executor) => Promise<void>): Promise<void> {
  await db.orm.transaction(async (tx) => {
    const [lock] = await rows<{ ok: boolean }>(
      tx,
      sql`SELECT pg_try_advisory_xact_lock(${LEADER_LOCK}) AS ok`,
    );
    if (lock?.ok) await fn(tx);
  });
}
