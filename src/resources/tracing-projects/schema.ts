import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, Uuid } from "../../http/schemas.ts";

export const TracingProject = Type.Object({
  id: Uuid,
  name: Type.String(),
  tenant_id: Uuid,
  deployment_id: Nullable(Uuid),
  created_at: DateTime,
});
export type TracingProject = Static<typeof TracingProject>;

export const ListTracingProjectsQuery = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "Exact name." })),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 100 }),
  offset: Type.Integer({ minimum: 0, default: 0 }),
});
export type ListTracingProjectsQuery = Static<typeof ListTracingProjectsQuery>;

export const TracingProjectParams = Type.Object({ id: Uuid });
