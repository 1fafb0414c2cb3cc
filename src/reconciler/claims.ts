import { sql } from "drizzle-orm";
import { type Executor, rows } from "../db/client.ts";
import type { RevisionStatus } from "./states.ts";
import { CLAIMABLE, leaseInterval, statusList } from "./statuses.ts";

export interface ClaimedRevision {
  id: string;
  status: RevisionStatus;
}

/**
 * Leases up to `limit` revisions that need work and whose lease is free or expired. A revision
 * waits while an older revision of its deployment is still in progress, so one deployment's
 * revisions are built and switched in order. SKIP LOCKED lets any number of workers claim at once;
 * a row another worker just leased is re-checked by PostgreSQL and no longer matches.
 */
export async function claimRevisions(
  exec: Executor,
  owner: string,
  leaseMs: number,
  limit: number,
): Promise<ClaimedRevision[]> {
  if (limit <= 0) return [];
  return rows<ClaimedRevision>(
    exec,
    sql`UPDATE revisions SET lease_owner = ${owner}, lease_expires_at = ${leaseInterval(leaseMs)}
         WHERE id IN (
           SELECT r.id FROM revisions r JOIN deployments d ON d.id = r.deployment_id
            WHERE r.status IN (${statusList(CLAIMABLE)})
              AND (r.lease_expires_at IS NULL OR r.lease_expires_at < now())
              AND d.status <> 'AWAITING_DELETE'
              AND NOT EXISTS (
                SELECT 1 FROM revisions o
                 WHERE o.deployment_id = r.deployment_id AND o.seq < r.seq
                   AND o.status IN (${statusList(CLAIMABLE)}))
            ORDER BY r.created_at, r.seq
            FOR UPDATE OF r SKIP LOCKED
            LIMIT ${limit})
           AND (lease_expires_at IS NULL OR lease_expires_at < now())
         RETURNING id, status`,
  );
}

/** Extends a lease; false when the revision was taken over or ended (interrupted, skipped). */
export async function renewLease(
  exec: Executor,
  id: string,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  const done = await rows<{ id: string }>(
    exec,
    sql`UPDATE revisions SET lease_expires_at = ${leaseInterval(leaseMs)}
         WHERE id = ${id} AND lease_owner = ${owner} AND status IN (${statusList(CLAIMABLE)})
         RETURNING id`,
  );
  return done.length === 1;
}

/** Gives a lease back; `retryInMs` keeps others off it until then (back-off after a fault). */
export async function releaseLease(exec: Executor, id: string, owner: string, retryInMs = 0): Promise<void> {
  await exec.execute(
    sql`UPDATE revisions
           SET lease_owner = NULL,
               lease_expires_at = CASE WHEN ${retryInMs}::int > 0 THEN ${leaseInterval(retryInMs)} ELSE NULL END
         WHERE id = ${id} AND lease_owner = ${owner}`,
  );
}

/** Of the given revisions, those no longer leased to `owner` in a status that needs work. */
export async function lostRevisions(exec: Executor, ids: string[], owner: string): Promise<string[]> {
  if (ids.length === 0) return [];
  const held = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM revisions
         WHERE id IN (${sql.join(
           ids.map((id) => sql`${id}::uuid`),
           sql`, `,
         )})
           AND lease_owner = ${owner} AND status IN (${statusList(CLAIMABLE)})`,
  );
  const keep = new Set(held.map((r) => r.id));
  return ids.filter((id) => !keep.has(id));
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
    sql`UPDATE deployments SET reconcile_owner = ${owner}, reconcile_expires_at = ${leaseInterval(leaseMs)}
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
    sql`UPDATE deployments SET reconcile_owner = NULL, reconcile_expires_at = ${leaseInterval(retryInMs)}
         WHERE id = ${id} AND reconcile_owner = ${owner}`,
  );
}
