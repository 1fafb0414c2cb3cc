import { type Static, Type } from "@sinclair/typebox";
import { Uuid } from "../../core/shapes.ts";

// Optional (not required in the OpenAPI document); Ajv still fills in the default.
const DeleteTracingProject = Type.Optional(
  Type.Boolean({
    default: false,
    description: "Delete the deployment's tracing project too (by default it is kept, detached).",
  }),
);

export const DeleteDeploymentQuery = Type.Object({ delete_tracing_project: DeleteTracingProject });
export type DeleteDeploymentQuery = Static<typeof DeleteDeploymentQuery>;

export const MAX_BULK_DELETE = 100;

export const BulkDeleteQuery = Type.Object({
  deployment_ids: Type.Array(Type.String(), {
    minItems: 1,
    description: `1–${MAX_BULK_DELETE} deployment ids (uuid): the key repeated, or comma-separated values, or both.`,
  }),
  delete_tracing_project: DeleteTracingProject,
});
export type BulkDeleteQuery = Static<typeof BulkDeleteQuery>;

export const BulkDeleteResult = Type.Object({
  deployment_id: Uuid,
  status: Type.Integer({
    description: "204: now AWAITING_DELETE (or already was); 404: no such deployment in the workspace.",
  }),
  detail: Type.Optional(Type.String({ description: "Why this id was not deleted." })),
});
export type BulkDeleteResult = Static<typeof BulkDeleteResult>;

export const BulkDeleteResponse = Type.Object(
  { results: Type.Array(BulkDeleteResult, { description: "One entry per distinct id, in request order." }) },
  { description: "Every id was deleted (200), or only some were (207)." },
);

export const BulkDeleteNotFound = Type.Object(
  { detail: Type.String(), results: Type.Array(BulkDeleteResult) },
  { description: "None of the ids is a deployment of the workspace; nothing changed." },
);
