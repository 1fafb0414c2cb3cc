import { type SQL, sql } from "drizzle-orm";
import { type Executor, rows } from "../../db/client.ts";

/**
 * The only module that writes SQL on `audit_log`: a record is written in the transaction of the
 * change it reports (scope.ts), completed with how the response ended, and pruned by the leader.
 * Reading it is the audit-log resource's (resources/audit-log/store.ts).
 */

/** What the audit record of one API write says, known before the handler runs (http/audit.ts fills it). */
export interface AuditScope {
  id: string;
  organizationId: string;
  workspaceId: string | null;
  /** Null when no API key acted: a signed code-host push (`actor` then says who). */
  keyId: string | null;
  /** Recorded as the key description when there is no key. */
  actor?: string;
  method: string;
  route: string;
  action: string;
  resourceType: string;
  resourceId: string | null;
  requestId: string;
  /**
   * The status code the route answers when the change succeeds (its one 2xx), or null: a record
   * written in the change's transaction carries it, so a response with that code needs no second
   * statement to complete the record.
   */
  successStatus: number | null;
  /** Set once the record was written in a transaction of the change (then the response completes it). */
  recorded: boolean;
}

/**
 * Text as the audit log stores it: a NUL byte, which PostgreSQL's text refuses ("invalid byte
 * sequence"), is written as the six characters `\u0000`, so a refused write whose path parameter
 * holds one is still recorded. Every caller-controlled value goes through here; route, method and
 * action come from route patterns.
 */
export function storableText<T extends string | null | undefined>(value: T): T {
  return (typeof value === "string" && value.includes("\0") ? value.replaceAll("\0", "\\u0000") : value) as T;
}

/** One record; the key's description is copied now (a later edit or revoke does not rewrite history). */
export async function insertAuditRecord(
  exec: Executor,
  s: AuditScope,
  statusCode: number | null,
): Promise<void> {
  await exec.execute(auditInsert(s, statusCode));
}

/**
 * The statement `insertAuditRecord` runs; also a data-modifying CTE's part, which may `gate` it on
 * a condition (the rest of the statement changed something).
 */
export function auditInsert(s: AuditScope, statusCode: number | null, gate?: SQL): SQL {
  return sql`INSERT INTO audit_log (id, organization_id, workspace_id, key_id, key_description, method, route, action,
                               resource_type, resource_id, status_code, request_id)
        SELECT ${s.id}::uuid, ${s.organizationId}::uuid, ${s.workspaceId}::uuid, ${s.keyId}::uuid,
               coalesce((SELECT description FROM api_keys WHERE id = ${s.keyId}::uuid), ${storableText(s.actor ?? "")}),
               ${s.method}::text, ${storableText(s.route)}::text, ${s.action}::text, ${s.resourceType}::text,
               ${storableText(s.resourceId)}::text, ${statusCode}::int, ${storableText(s.requestId)}::text
         WHERE ${gate ?? sql`true`}
        ON CONFLICT (id) DO NOTHING`;
}

/**
 * Completes a record written in the change's transaction with how the response ended; false when
 * there is none (no transaction recorded it, or it rolled back).
 */
export async function completeAuditRecord(
  exec: Executor,
  id: string,
  statusCode: number,
  resourceId: string | null,
): Promise<boolean> {
  const done = await rows<{ id: string }>(
    exec,
    sql`UPDATE audit_log SET status_code = ${statusCode}, resource_id = coalesce(resource_id, ${storableText(resourceId)})
         WHERE id = ${id} RETURNING id`,
  );
  return done.length > 0;
}

/** Drops records older than `days` days (the reconciler leader calls this). Returns how many went. */
export async function pruneAuditLog(exec: Executor, days: number): Promise<number> {
  const gone = await rows<{ id: string }>(
    exec,
    sql`DELETE FROM audit_log WHERE at < now() - ${days}::int * interval '1 day' RETURNING id`,
  );
  return gone.length;
}
