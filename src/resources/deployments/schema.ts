// Why over 300 lines: the deployments contract (request and response shapes, ResourceSpec and
// its Kubernetes helper shapes) in one file, the single source of validation and of /openapi.json.
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import {
  Count as CountInt,
  DateTime,
  OrNull,
  QueryLimit,
  QueryOffset,
  StringEnum,
  Uuid,
} from "../../core/shapes.ts";
import { DEPLOYMENT_STATUSES, REVISION_STATUSES } from "../../reconciler/states.ts";

/** Optional and nullable: in requests, omitted and null both mean "not given". */
const Opt = <T extends TSchema>(schema: T) => Type.Optional(OrNull(schema));

/** Unknown keys are dropped (not stored, not an error): Ajv's removeAdditional acts on these. */
const closed = { additionalProperties: false } as const;
const FreeForm = Type.Object({}, { additionalProperties: true });

export const SOURCES = [
  "codehost",
  "external_docker",
  "internal_docker",
  "internal_source",
  "internal_template",
] as const;
export type Source = (typeof SOURCES)[number];
export const REVISION_SOURCES = ["codehost", "internal_docker", "internal_source"] as const;
export const DEPLOYMENT_TYPES = ["dev_free", "dev", "prod"] as const;
export type DeploymentType = (typeof DEPLOYMENT_TYPES)[number];

export const SourceEnum = StringEnum(SOURCES);
export const DeploymentTypeEnum = StringEnum(DEPLOYMENT_TYPES);
export const DeploymentStatusEnum = StringEnum(DEPLOYMENT_STATUSES);

const Cpu = Type.Number({ minimum: 0 });
const Count = CountInt();

const VolumeMount = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    mountPath: Type.String({ minLength: 1 }),
    subPath: Type.Optional(Type.String()),
    mountPropagation: Type.Optional(Type.String()),
    subPathExpr: Type.Optional(Type.String()),
    readOnly: Type.Optional(Type.Boolean()),
  },
  closed,
);

const Volume = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    configMap: Type.Optional(FreeForm),
    secret: Type.Optional(FreeForm),
    emptyDir: Type.Optional(FreeForm),
    persistentVolumeClaim: Type.Optional(FreeForm),
    nfs: Type.Optional(FreeForm),
    projected: Type.Optional(FreeForm),
    downwardAPI: Type.Optional(FreeForm),
    csi: Type.Optional(FreeForm),
  },
  closed,
);

const Container = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    image: Type.Optional(Type.String()),
    imagePullPolicy: Type.Optional(Type.String()),
    workingDir: Type.Optional(Type.String()),
    restartPolicy: Type.Optional(Type.String()),
    command: Type.Optional(Type.Array(Type.String())),
    args: Type.Optional(Type.Array(Type.String())),
    env: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ minLength: 1 }),
            value: Type.Optional(Type.String()),
            valueFrom: Type.Optional(FreeForm),
          },
          closed,
        ),
      ),
    ),
    envFrom: Type.Optional(Type.Array(FreeForm)),
    resources: Type.Optional(
      Type.Object({ limits: Type.Optional(FreeForm), requests: Type.Optional(FreeForm) }, closed),
    ),
    volumeMounts: Type.Optional(Type.Array(VolumeMount)),
    securityContext: Type.Optional(FreeForm),
  },
  closed,
);

export const RESOURCE_SPEC_CPU = [
  "cpu",
  "cpu_limit",
  "queue_cpu",
  "queue_cpu_limit",
  "orchestrator_cpu",
  "orchestrator_cpu_limit",
  "executor_cpu",
  "executor_cpu_limit",
  "redis_cpu",
  "redis_cpu_limit",
  "db_cpu",
  "db_cpu_limit",
] as const;
export const RESOURCE_SPEC_COUNTS = [
  "min_scale",
  "max_scale",
  "memory_mb",
  "memory_limit_mb",
  "queue_min_scale",
  "queue_max_scale",
  "queue_memory_mb",
  "queue_memory_limit_mb",
  "orchestrator_memory_mb",
  "orchestrator_memory_limit_mb",
  "orchestrator_min_scale",
  "orchestrator_max_scale",
  "executor_memory_mb",
  "executor_memory_limit_mb",
  "redis_memory_mb",
  "redis_memory_limit_mb",
  "db_memory_mb",
  "db_memory_limit_mb",
  "db_storage_gi",
  "db_max_connections",
] as const;

/**
 * The hosted service's bounds (cores) on the API, queue and cache cpu and their limits; these are
 * also rounded to 0.1 (resource-spec.ts). The other cpu fields only have to be numbers.
 */
export const RESOURCE_SPEC_CPU_BOUNDS: Readonly<Record<string, { minimum: number; maximum: number }>> = {
  cpu: { minimum: 0.1, maximum: 8 },
  cpu_limit: { minimum: 0.1, maximum: 16 },
  queue_cpu: { minimum: 0.1, maximum: 8 },
  queue_cpu_limit: { minimum: 0.1, maximum: 16 },
  redis_cpu: { minimum: 0.1, maximum: 8 },
  redis_cpu_limit: { minimum: 0.1, maximum: 16 },
};

const numericSpec: Record<string, TSchema> = {};
for (const k of RESOURCE_SPEC_CPU) {
  const bounds = RESOURCE_SPEC_CPU_BOUNDS[k];
  numericSpec[k] = Opt(
    bounds
      ? Type.Number({ ...bounds, description: `Cores, ${bounds.minimum}–${bounds.maximum}, rounded to 0.1.` })
      : Cpu,
  );
}
for (const k of RESOURCE_SPEC_COUNTS) numericSpec[k] = Opt(Count);

/** Request and response: only the keys that are set are stored and returned. */
export const ResourceSpec = Type.Object(
  {
    ...numericSpec,
    labels: Opt(Type.Record(Type.String(), Type.String())),
    annotations: Opt(Type.Record(Type.String(), Type.String())),
    service_account_name: Opt(Type.String({ minLength: 1, maxLength: 253 })),
    image_pull_secrets: Opt(Type.Array(Type.Object({ name: Type.String({ minLength: 1 }) }, closed))),
    volumes: Opt(Type.Array(Volume)),
    volume_mounts: Opt(Type.Array(VolumeMount)),
    init_containers: Opt(Type.Array(Container)),
    sidecars: Opt(Type.Array(Container)),
  },
  closed,
);
export type ResourceSpec = Record<string, unknown>;

const ListenerConfig = Type.Object(
  { k8s_namespace: Opt(Type.String({ minLength: 1, maxLength: 63 })) },
  closed,
);

export const Secret = Type.Object(
  { name: Type.String({ maxLength: 255 }), value: Type.String({ maxLength: 65536 }) },
  closed,
);
export type Secret = Static<typeof Secret>;

export const SecretReference = Type.Object(
  {
    name: Type.String({ maxLength: 255 }),
    secret_name: Type.String({ maxLength: 253 }),
    secret_key: Type.String({ maxLength: 253 }),
  },
  closed,
);
export type SecretReference = Static<typeof SecretReference>;

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

export const MASK = "********";

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

export const DeploymentParams = Type.Object({ deployment_id: Uuid });
