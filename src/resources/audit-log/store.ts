import { type SQL, sql } from "drizzle-orm";
import { type Reader, rows } from "../../db/client.ts";
import { isoSql } from "../../db/sql.ts";
import type { AuditQuery, AuditRecord } from "./schema.ts";

/** What the audit log shows: its records are written by core/audit/store.ts. */

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
