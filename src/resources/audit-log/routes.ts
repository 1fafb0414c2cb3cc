import { Type } from "@sinclair/typebox";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { AuditQuery, AuditRecord } from "./schema.ts";
import { listAuditRecords } from "./store.ts";

export async function auditLogRoutes(app: App): Promise<void> {
  const orm = app.deps.db.orm;

  app.get(
    "/v1/audit-log",
    {
      config: { auth: { role: "admin" } },
      schema: {
        tags: ["audit-log"],
        summary:
          "Writes made through the API, newest first (organization admins: their organization, or their workspace for a bound key; system keys: every organization)",
        querystring: AuditQuery,
        response: { 200: Type.Array(AuditRecord) },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const visibility = p.isSystem
        ? { organizationId: null, workspaceId: null }
        : { organizationId: p.organizationId, workspaceId: p.boundWorkspaceId };
      return listAuditRecords(orm, visibility, request.query);
    },
  );
}
