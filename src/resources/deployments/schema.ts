// The deployments contract (request and response shapes), the single source of validation and of
// /openapi.json; ResourceSpec comes from its field registry (core/spec/fields.ts).
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import {
  DEPLOYMENT_TYPES,
  MASK,
  REVISION_SOURCES,
  Secret,
  SecretReference,
  SOURCES,
} from "../../core/model.ts";
import { DEPLOYMENT_STATUSES, REVISION_STATUSES } from "../../core/revisions/states.ts";
import { DateTime, OrNull, QueryLimit, QueryOffset, StringEnum, Uuid } from "../../core/shapes.ts";
import { ResourceSpec } from "../../core/spec/fields.ts";

/** Optional and nullable: in requests, omitted and null both mean "not given". */
const Opt = <T extends TSchema>(schema: T) => Type.Optional(OrNull(schema));

/** Unknown keys are dropped (not stored, not an error): Ajv's removeAdditional acts on these. */
const closed = { additionalProperties: false } as const;

export const SourceEnum = StringEnum(SOURCES);
export const DeploymentTypeEnum = StringEnum(DEPLOYMENT_TYPES);
export const DeploymentStatusEnum = StringEnum(DEPLOYMENT_STATUSES);

const ListenerConfig = Type.Object(
  { k8s_namespace: Opt(Type.String({ minLength: 1, maxLength: 63 })) },
  closed,
);

/** SourceConfig as sent: every field nullable, checked against the source's rules. */
export const SourceConfigBody = Type.Object(
  {
    integration_id: Opt(Uuid),
    repo_url: Opt(Type.String({ minLength: 1, maxLength: 2048 })),
    build_on_push: Opt(Type.Boolean()),
    custom_url: Opt(Type.String({ minLength: 1, maxLength: 2048 })),
    resource_spec: Opt(ResourceSpec),
    listener_id: Opt(Uuid),
    listener_config: Opt(ListenerConfig),
    install_command: Opt(Type.String({ minLength: 1, maxLength: 4096 })),
    build_command: Opt(Type.String({ minLength: 1, maxLength: 4096 })),
    deployment_type: Opt(DeploymentTypeEnum),
  },
  closed,
);
export type SourceConfigBody = Static<typeof SourceConfigBody>;

export const SourceRevisionConfigBody = Type.Object(
  {
    repo_ref: Opt(Type.String({ minLength: 1, maxLength: 255 })),
    framework_config_path: Opt(Type.String({ minLength: 1, maxLength: 1024 })),
    image_uri: Opt(Type.String({ minLength: 1, maxLength: 2048 })),
    source_tarball_path: Opt(Type.String({ minLength: 1, maxLength: 1024 })),
  },
  closed,
);
export type SourceRevisionConfigBody = Static<typeof SourceRevisionConfigBody>;

export const SourceConfig = Type.Object({
  integration_id: OrNull(Uuid),
  repo_url: OrNull(Type.String()),
  build_on_push: OrNull(Type.Boolean()),
  custom_url: OrNull(Type.String()),
  resource_spec: OrNull(ResourceSpec),
  listener_id: OrNull(Uuid),
  listener_config: OrNull(Type.Object({ k8s_namespace: OrNull(Type.String()) })),
  install_command: OrNull(Type.String()),
  build_command: OrNull(Type.String()),
});
export type SourceConfig = Static<typeof SourceConfig>;

export const SourceRevisionConfig = Type.Object({
  repo_ref: OrNull(Type.String()),
  framework_config_path: OrNull(Type.String()),
  image_uri: OrNull(Type.String()),
  source_tarball_path: OrNull(Type.String()),
  repo_commit_sha: OrNull(Type.String()),
});
export type SourceRevisionConfig = Static<typeof SourceRevisionConfig>;

export const Deployment = Type.Object({
  name: Type.String(),
  source: SourceEnum,
  source_config: SourceConfig,
  source_revision_config: SourceRevisionConfig,
  secrets: Type.Array(Secret, { description: `Values are always masked as "${MASK}".` }),
  id: Uuid,
  tenant_id: Uuid,
  created_at: DateTime,
  updated_at: DateTime,
  status: DeploymentStatusEnum,
  latest_revision_id: OrNull(Uuid),
  latest_revision_status: OrNull(
    StringEnum(REVISION_STATUSES, {
      description:
        "The status of the latest revision (an addition to the interface, read-only): `status` stays " +
        "READY while a newer revision fails, this shows the failure. Null before the first revision.",
    }),
  ),
  active_revision_id: OrNull(Uuid),
  secret_references: OrNull(Type.Array(SecretReference)),
  image_version: OrNull(Type.String()),
  deployment_type: DeploymentTypeEnum,
});
export type Deployment = Static<typeof Deployment>;

export const DeploymentList = Type.Object({
  resources: Type.Array(Deployment),
  offset: Type.Integer({ description: "Pass this as `offset` to fetch the next page." }),
});
export type DeploymentList = Static<typeof DeploymentList>;

export const CreateDeploymentBody = Type.Object(
  {
    name: Type.String({
      description: "1–63 lowercase letters, digits and '-', starting with a letter; unique in the workspace.",
    }),
    source: SourceEnum,
    source_config: Opt(SourceConfigBody),
    source_revision_config: Opt(SourceRevisionConfigBody),
    secrets: Opt(Type.Array(Secret)),
    secret_references: Opt(Type.Array(SecretReference)),
    image_version: Opt(Type.String({ maxLength: 255 })),
    deployment_type: Opt(DeploymentTypeEnum),
  },
  closed,
);
export type CreateDeploymentBody = Static<typeof CreateDeploymentBody>;

export const PatchDeploymentBody = Type.Object(
  {
    revision_source: Opt(StringEnum(REVISION_SOURCES)),
    source_config: Opt(SourceConfigBody),
    source_revision_config: Opt(SourceRevisionConfigBody),
    secrets: Opt(Type.Array(Secret)),
    secret_references: Opt(Type.Array(SecretReference)),
    image_version: Opt(Type.String({ maxLength: 255 })),
    // Immutable: accepted only with the current value (400 otherwise).
    name: Opt(Type.String()),
    source: Opt(SourceEnum),
    deployment_type: Opt(DeploymentTypeEnum),
  },
  closed,
);
export type PatchDeploymentBody = Static<typeof PatchDeploymentBody>;

export const ListDeploymentsQuery = Type.Object({
  limit: QueryLimit(100, 20),
  offset: QueryOffset(),
  name: Type.Optional(
    Type.String({ maxLength: 63, description: "Exact name: at most one deployment matches." }),
  ),
  name_contains: Type.Optional(Type.String({ maxLength: 63 })),
  status: Type.Optional(Type.String({ description: "Comma-separated deployment statuses." })),
  latest_revision_status: Type.Optional(
    Type.String({
      description: "Comma-separated revision statuses: the state of each deployment's latest revision.",
    }),
  ),
  remote_reconciled: Type.Optional(Type.Boolean()),
  tag_value_ids: Type.Optional(
    Type.String({
      description:
        "Comma-separated tag value ids: a deployment matches when it has, for every tag key among " +
        "them, at least one of the listed values of that key.",
    }),
  ),
  image_version: Type.Optional(Type.String()),
  deployment_type: Type.Optional(DeploymentTypeEnum),
  deployment_ids: Type.Optional(Type.String({ description: "Comma-separated deployment ids." })),
});
export type ListDeploymentsQuery = Static<typeof ListDeploymentsQuery>;
