import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, QueryLimit, QueryOffset, Uuid } from "../../core/shapes.ts";

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
  limit: QueryLimit(100, 100),
  offset: QueryOffset(),
});
export type ListTracingProjectsQuery = Static<typeof ListTracingProjectsQuery>;

export const TracingProjectParams = Type.Object({ id: Uuid });
