import { type SQL, sql } from "drizzle-orm";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { isoSql } from "../../db/sql.ts";
import type { AuditQuery, AuditRecord } from "./schema.ts";
import type { AuditScope } from "./scope.ts";

/** The only module that writes SQL on `audit_log`. */

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
               coalesce((SELECT description FROM api_keys WHERE id = ${s.keyId}::uuid), ${s.actor ?? ""}),
               ${s.method}::text, ${s.route}::text, ${s.action}::text, ${s.resourceType}::text,
               ${s.resourceId}::text, ${statusCode}::int, ${s.requestId}::text
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
    sql`UPDATE audit_log SET status_code = ${statusCode}, resource_id = coalesce(resource_id, ${resourceId})
         WHERE id = ${id} RETURNING id`,
  );
  return done.length > 0;
}

/** Who may see what: one organization (and one workspace for a bound key), or everything (system keys). */
export interface AuditVisibility {
  organizationId: string | null;
  workspaceId: string | null;
}

export function listAuditRecords(exec: Reader, v: AuditVisibility, q: AuditQuery): Promise<AuditRecord[]> {
  const where: SQL[] = [sql`true`];
  if (v.organizationId !== null) where.push(sql`organization_id = ${v.organizationId}`);
  if (v.workspaceId !== null) where.push(sql`workspace_id = ${v.workspaceId}`);
  if (q.organization_id !== undefined) where.push(sql`organization_id = ${q.organization_id}`);
  if (q.tenant_id !== undefined) where.push(sql`workspace_id = ${q.tenant_id}`);
  if (q.since !== undefined) where.push(sql`at >= ${q.since}::timestamptz`);
  if (q.until !== undefined) where.push(sql`at < ${q.until}::timestamptz`);
  if (q.resource_type !== undefined) where.push(sql`resource_type = ${q.resource_type}`);
  if (q.resource_id !== undefined) where.push(sql`resource_id = ${q.resource_id}`);
  if (q.key_id !== undefined) where.push(sql`key_id = ${q.key_id}`);
  if (q.action !== undefined) where.push(sql`action = ${q.action}`);
  if (q.method !== undefined) where.push(sql`method = ${q.method}`);
  return rows<AuditRecord>(
    exec,
    sql`SELECT id, ${sql.raw(isoSql("at"))} AS at, organization_id, workspace_id AS tenant_id, key_id,
               key_description, method, route, action, resource_type, resource_id, status_code, request_id
          FROM audit_log WHERE ${sql.join(where, sql` AND `)}
         ORDER BY at DESC, id DESC LIMIT ${q.limit} OFFSET ${q.offset}`,
  );
}

/** Drops records older than `days` days (the reconciler leader calls this). Returns how many went. */
export async function pruneAuditLog(exec: Executor, days: number): Promise<number> {
  const gone = await rows<{ id: string }>(
    exec,
    sql`DELETE FROM audit_log WHERE at < now() - ${days}::int * interval '1 day' RETURNING id`,
  );
  return gone.length;
}
