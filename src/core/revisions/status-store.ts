import { type SQL, sql } from "drizzle-orm";
import { type Executor, inTransaction, rows } from "../../db/client.ts";
import type { StatusChange } from "../../db/schema/deployments.ts";
import { fromNow } from "../../db/sql.ts";
import { emit } from "../events/emit.ts";
import { assertTransition, isTerminal, type RevisionStatus, statusMessage } from "./states.ts";

/**
 * The one writer of a revision's status: every change goes through `writeRevisionStatus` (or the
 * statement `revisionStatusStatement` builds for a data-modifying CTE), which checks the
 * transitions table, appends status_history and emits `revision.status_changed`.
 */

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
