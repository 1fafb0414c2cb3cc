import { sql } from "drizzle-orm";
import { CLAIMABLE, type RevisionStatus } from "../../core/revisions/states.ts";
import { CLAIM_LOCK } from "../../db/channels.ts";
import { type Database, rows } from "../../db/client.ts";
import { fromNow, sqlList } from "../../db/sql.ts";

/** The claim of revisions (lease columns only, like store.ts): which revisions a worker starts next. */

export interface ClaimedRevision {
  id: string;
  status: RevisionStatus;
}

/**
 * Statuses in which a leased revision is building (or about to: every claim rebuilds), so it counts
 * against its workspace's builds. From AWAITING_DEPLOY on it no longer does.
 */
export const BUILDING_STATES: readonly RevisionStatus[] = ["QUEUED", "AWAITING_BUILD", "BUILDING", "UNKNOWN"];

/**
 * Leases up to `limit` revisions that need work and whose lease is free or expired. A revision
 * waits while an older revision of its deployment is still in progress, so one deployment's
 * revisions are built and switched in order.
 *
 * Builds are fair across workspaces: a workspace runs at most `perWorkspace` builds at once
 * (counted over every process, from the leases), and among the revisions that may start, each
 * workspace's next one is ranked by how many builds it would then run: round-robin across
 * workspaces, oldest first within one, so one workspace's backlog never holds another's first
 * build. Concurrent claimers rank the same rows, so SKIP LOCKED alone keeps them under the limit,
 * but all but one would come back empty; CLAIM_LOCK makes them take turns instead, each seeing the
 * leases of the one before. SKIP LOCKED still keeps a row the API is updating from blocking a claim.
 */
export async function claimRevisions(
  db: Database,
  owner: string,
  leaseMs: number,
  limit: number,
  perWorkspace = Number.MAX_SAFE_INTEGER,
): Promise<ClaimedRevision[]> {
  if (limit <= 0) return [];
  return db.orm.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${CLAIM_LOCK})`);
    return rows<ClaimedRevision>(
      tx,
      sql`WITH candidates AS (
            SELECT r.id, r.created_at, r.seq, d.workspace_id FROM revisions r JOIN deployments d ON d.id = r.deployment_id
             WHERE r.status IN (${sqlList(CLAIMABLE)})
               AND (r.lease_expires_at IS NULL OR r.lease_expires_at < now())
               AND d.status <> 'AWAITING_DELETE'
               AND NOT EXISTS (
                 SELECT 1 FROM revisions o
                  WHERE o.deployment_id = r.deployment_id AND o.seq < r.seq
                    AND o.status IN (${sqlList(CLAIMABLE)}))),
          building AS (
            SELECT d.workspace_id, count(*) AS n FROM revisions b JOIN deployments d ON d.id = b.deployment_id
             WHERE b.status IN (${sqlList(BUILDING_STATES)})
               AND b.lease_owner IS NOT NULL AND b.lease_expires_at > now()
             GROUP BY d.workspace_id),
          ranked AS (
            SELECT c.id, c.created_at, c.seq,
                   COALESCE(b.n, 0) + row_number() OVER (PARTITION BY c.workspace_id ORDER BY c.created_at, c.seq) AS depth
              FROM candidates c LEFT JOIN building b ON b.workspace_id = c.workspace_id)
          UPDATE revisions SET lease_owner = ${owner}, lease_expires_at = ${fromNow(leaseMs)}
           WHERE id IN (
             SELECT r.id FROM revisions r JOIN ranked k ON k.id = r.id
              WHERE k.depth <= ${perWorkspace}
              ORDER BY k.depth, k.created_at, k.seq
              FOR UPDATE OF r SKIP LOCKED
              LIMIT ${limit})
             AND (lease_expires_at IS NULL OR lease_expires_at < now())
           RETURNING id, status`,
    );
  });
}
