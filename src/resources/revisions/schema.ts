import { type Static, Type } from "@sinclair/typebox";
import { REVISION_STATUSES } from "../../core/revisions/states.ts";
import { DateTime, OrNull, QueryLimit, QueryOffset, StringEnum, Uuid } from "../../core/shapes.ts";
import { SourceEnum, SourceRevisionConfig } from "../deployments/schema.ts";

export const RevisionStatusEnum = StringEnum(REVISION_STATUSES);

export const StatusChange = Type.Object({
  status: RevisionStatusEnum,
  at: DateTime,
  message: Type.Optional(Type.String()),
});

export const Revision = Type.Object({
  id: Uuid,
  created_at: DateTime,
  updated_at: DateTime,
  status: RevisionStatusEnum,
  source: SourceEnum,
  source_revision_config: SourceRevisionConfig,
  deployment_id: Uuid,
  status_history: Type.Array(StatusChange, { description: "Every status the revision took, oldest first." }),
  status_message: OrNull(
    Type.String({
      description:
        "Null while the revision is fine; when it failed, was skipped, interrupted or lost its data " +
        "plane, the reason in one line (e.g. `npm ci exited 1`), without the status.",
    }),
  ),
  number: Type.Integer({
    minimum: 1,
    description:
      "The revision's creation order in its deployment, from 1 (an addition to the interface, read-only): " +
      "`#5` in the console and the CLI.",
  }),
});
export type Revision = Static<typeof Revision>;

export const RevisionList = Type.Object({
  resources: Type.Array(Revision),
  offset: Type.Integer({ description: "Pass this as `offset` to fetch the next page." }),
});
export type RevisionList = Static<typeof RevisionList>;

export const ListRevisionsQuery = Type.Object({
  limit: QueryLimit(100, 20),
  offset: QueryOffset(),
  status: Type.Optional(Type.String({ description: "Comma-separated revision statuses." })),
  remote_reconciled: Type.Optional(
    Type.Boolean({
      description:
        "Revisions applied by a listener on a Kubernetes cluster (true) or run by this server's own " +
        "runtime (false).",
    }),
  ),
});
export type ListRevisionsQuery = Static<typeof ListRevisionsQuery>;

export const RevisionParams = Type.Object({ deployment_id: Uuid, revision_id: Uuid });
