import { sql } from "drizzle-orm";
import { type Executor, rows } from "../db/client.ts";
import {
  assertDeploymentTransition,
  assertTransition,
  type DeploymentStatus,
  isTerminal,
  type RevisionStatus,
  statusMessage,
} from "./states.ts";
import { leaseInterval } from "./statuses.ts";

export interface RevisionMove {
  id: string;
  from: RevisionStatus;
  to: RevisionStatus;
  /** The worker that must still hold the lease for the write to happen. */
  owner: string;
  leaseMs: number;
  message?: string;
}

/**
 * Moves a revision along the transitions table, only if it is still in `from` and still leased to
 * `owner`: a SKIPPED or INTERRUPTED written by the API (or another worker's claim) wins, and the
 * caller learns it from `false`. Terminal moves release the lease; others renew it.
 */
export async function moveRevision(exec: Executor, m: RevisionMove): Promise<boolean> {
  assertTransition(m.from, m.to);
  const entry = JSON.stringify([
    { status: m.to, at: new Date().toISOString(), ...(m.message ? { message: m.message } : {}) },
  ]);
  const terminal = isTerminal(m.to);
  const done = await rows<{ id: string }>(
    exec,
    sql`UPDATE revisions
           SET status = ${m.to},
               status_history = status_history || ${entry}::jsonb,
               status_message = ${statusMessage(m.to, m.message)},
               updated_at = now(),
               lease_owner = CASE WHEN ${terminal}::boolean THEN NULL ELSE lease_owner END,
               lease_expires_at = CASE WHEN ${terminal}::boolean THEN NULL ELSE ${leaseInterval(m.leaseMs)} END
         WHERE id = ${m.id} AND status = ${m.from} AND lease_owner = ${m.owner}
         RETURNING id`,
  );
  return done.length === 1;
}

/** Moves a deployment's status along its transitions table, only if it is still in `from`. */
export async function moveDeployment(
  exec: Executor,
  id: string,
  from: DeploymentStatus,
  to: DeploymentStatus,
): Promise<boolean> {
  assertDeploymentTransition(from, to);
  const done = await rows<{ id: string }>(
    exec,
    sql`UPDATE deployments SET status = ${to}, updated_at = now()
         WHERE id = ${id} AND status = ${from} RETURNING id`,
  );
  return done.length === 1;
}
