import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, QueryLimit, QueryOffset, StringEnum, Uuid } from "../../core/shapes.ts";

export const AuditRecord = Type.Object({
  id: Uuid,
  at: DateTime,
  organization_id: Uuid,
  tenant_id: Nullable(Uuid),
  key_id: Nullable(Uuid),
  key_description: Type.String(),
  method: Type.String(),
  route: Type.String({ description: "The route's pattern, e.g. `/v2/deployments/:deployment_id`." }),
  action: Type.String({
    description: "`<resource type>.<verb>`, e.g. `deployments.create`, `webhooks.rotate-secret`.",
  }),
  resource_type: Type.String(),
  resource_id: Nullable(Type.String()),
  status_code: Nullable(Type.Integer({ description: "Null only while the response is being sent." })),
  request_id: Type.String(),
});
export type AuditRecord = Static<typeof AuditRecord>;

export const AuditQuery = Type.Object({
  since: Type.Optional(Type.String({ format: "date-time", description: "From this time (included)." })),
  until: Type.Optional(Type.String({ format: "date-time", description: "Up to this time (excluded)." })),
  resource_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  resource_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  key_id: Type.Optional(Uuid),
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  method: Type.Optional(StringEnum(["POST", "PUT", "PATCH", "DELETE"] as const)),
  tenant_id: Type.Optional(Uuid),
  organization_id: Type.Optional(Uuid),
  limit: QueryLimit(500, 100),
  offset: QueryOffset(),
});
export type AuditQuery = Static<typeof AuditQuery>;
