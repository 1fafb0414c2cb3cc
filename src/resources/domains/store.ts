import { sql } from "drizzle-orm";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { isoSql } from "../../db/sql.ts";

/**
 * The only module that writes SQL on `custom_domains` (migration 0030). A hostname is claimed once
 * on the server: a second claim throws the driver's unique violation (service.ts: 409).
 */

export interface DomainRow {
  id: string;
  workspace_id: string;
  deployment_id: string;
  hostname: string;
  token: string;
  verification_status: "pending" | "verified";
  verification_reason: string | null;
  verified_at: string | null;
  created_at: string;
}

const COLS = sql.raw(`c.id, c.workspace_id, c.deployment_id, c.hostname, c.token, c.verification_status,
  c.verification_reason, ${isoSql("c.verified_at")} AS verified_at, ${isoSql("c.created_at")} AS created_at`);

/** A deployment's domains, oldest first. */
export function domainRows(exec: Reader, workspaceId: string, deploymentId: string): Promise<DomainRow[]> {
  return rows<DomainRow>(
    exec,
    sql`SELECT ${COLS} FROM custom_domains c
         WHERE c.workspace_id = ${workspaceId} AND c.deployment_id = ${deploymentId}
         ORDER BY c.created_at, c.id`,
  );
}

/** Who claimed a hostname already, if anyone. */
export async function hostnameClaim(
  exec: Reader,
  hostname: string,
): Promise<{ workspace_id: string; deployment_id: string } | undefined> {
  const [row] = await rows<{ workspace_id: string; deployment_id: string }>(
    exec,
    sql`SELECT workspace_id, deployment_id FROM custom_domains WHERE hostname = ${hostname}`,
  );
  return row;
}

export async function insertDomain(
  exec: Executor,
  d: { workspaceId: string; deploymentId: string; hostname: string; token: string },
): Promise<DomainRow> {
  const [row] = await rows<DomainRow>(
    exec,
    sql`INSERT INTO custom_domains AS c (workspace_id, deployment_id, hostname, token)
        VALUES (${d.workspaceId}, ${d.deploymentId}, ${d.hostname}, ${d.token}) RETURNING ${COLS}`,
  );
  return row as DomainRow;
}

export async function deleteDomainRow(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
  id: string,
): Promise<DomainRow | undefined> {
  const [row] = await rows<DomainRow>(
    exec,
    sql`DELETE FROM custom_domains AS c
         WHERE c.id = ${id} AND c.workspace_id = ${workspaceId} AND c.deployment_id = ${deploymentId}
         RETURNING ${COLS}`,
  );
  return row;
}

/** Every verified hostname with the name of the deployment it serves (the edge's custom hosts). */
export function verifiedHosts(exec: Reader): Promise<{ hostname: string; name: string }[]> {
  return rows<{ hostname: string; name: string }>(
    exec,
    sql`SELECT c.hostname, d.name FROM custom_domains c JOIN deployments d ON d.id = c.deployment_id
         WHERE c.verification_status = 'verified'`,
  );
}

export interface DueCheck {
  id: string;
  deployment_id: string;
  hostname: string;
  token: string;
  failed_checks: number;
}

/**
 * Claims up to `limit` pending domains whose check is due by pushing their next check `leaseMs`
 * ahead, so that servers sharing the database do not check one domain at once (SKIP LOCKED).
 */
export function claimDueChecks(exec: Executor, limit: number, leaseMs: number): Promise<DueCheck[]> {
  return rows<DueCheck>(
    exec,
    sql`UPDATE custom_domains AS c SET next_check_at = now() + make_interval(secs => ${leaseMs / 1000})
         WHERE c.id IN (SELECT id FROM custom_domains
                         WHERE verification_status = 'pending' AND next_check_at <= now()
                         ORDER BY next_check_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
         RETURNING c.id, c.deployment_id, c.hostname, c.token, c.failed_checks`,
  );
}

/** A check found the token: the domain is verified (a domain deleted meanwhile stays deleted). */
export async function markVerified(exec: Executor, id: string): Promise<boolean> {
  const done = await rows<{ id: string }>(
    exec,
    sql`UPDATE custom_domains SET verification_status = 'verified', verification_reason = NULL,
               verified_at = now()
         WHERE id = ${id} AND verification_status = 'pending' RETURNING id`,
  );
  return done.length > 0;
}

/** A check failed: why, and when the next one is due. */
export async function markFailedCheck(exec: Executor, id: string, reason: string, retryInMs: number) {
  await exec.execute(
    sql`UPDATE custom_domains SET verification_reason = ${reason}, failed_checks = failed_checks + 1,
               next_check_at = now() + make_interval(secs => ${retryInMs / 1000})
         WHERE id = ${id} AND verification_status = 'pending'`,
  );
}
