import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, OrNull, QueryLimit, QueryOffset, StringEnum, Uuid } from "../../core/shapes.ts";
import { RegistryCredentials } from "../push-tokens/schema.ts";

/** A Kubernetes namespace name (RFC 1123 label). */
export const Namespace = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
  description: "A Kubernetes namespace (lowercase letters, digits and '-', at most 63).",
});

export const ListenerComputeConfig = Type.Object(
  {
    k8s_namespaces: Type.Optional(
      OrNull(
        Type.Array(Namespace, {
          maxItems: 100,
          uniqueItems: true,
          description: "The namespaces deployments may target (listener_config.k8s_namespace).",
        }),
      ),
    ),
  },
  { additionalProperties: false },
);
export type ListenerComputeConfig = Static<typeof ListenerComputeConfig>;

const ComputeType = StringEnum(["k8s"] as const, { description: "Only Kubernetes today." });
const ListenerStatus = StringEnum(["CONNECTED", "DISCONNECTED"] as const, {
  description: "CONNECTED while the listener polled or reported within SLIPWAY_LISTENER_TIMEOUT_S.",
});
const Version = OrNull(
  Type.String({ maxLength: 100, description: "Free text, e.g. the listener's release." }),
);

export const Listener = Type.Object({
  id: Uuid,
  compute_type: ComputeType,
  compute_id: Type.String(),
  compute_config: Type.Object({ k8s_namespaces: Nullable(Type.Array(Type.String())) }),
  version: Nullable(Type.String()),
  status: ListenerStatus,
  last_seen_at: Nullable(DateTime),
  created_at: DateTime,
  updated_at: DateTime,
});
export type Listener = Static<typeof Listener>;

export const ListenerList = Type.Object({
  resources: Type.Array(Listener),
  offset: Type.Integer({ description: "Pass this as `offset` to fetch the next page." }),
});
export type ListenerList = Static<typeof ListenerList>;

export const CreateListenerBody = Type.Object(
  {
    version: Type.Optional(Version),
    compute_type: ComputeType,
    compute_id: Type.String({
      maxLength: 100,
      pattern: "^\\S(.*\\S)?$",
      description: "Your name for the cluster; unique in the workspace.",
    }),
    compute_config: ListenerComputeConfig,
  },
  { additionalProperties: false },
);
export type CreateListenerBody = Static<typeof CreateListenerBody>;

export const PatchListenerBody = Type.Object(
  {
    version: Type.Optional(Version),
    compute_config: Type.Optional(Nullable(ListenerComputeConfig)),
  },
  { additionalProperties: false },
);
export type PatchListenerBody = Static<typeof PatchListenerBody>;

export const ListenerParams = Type.Object({ listener_id: Uuid });

export const ListListenersQuery = Type.Object({ limit: QueryLimit(100, 20), offset: QueryOffset() });
export type ListListenersQuery = Static<typeof ListListenersQuery>;

export const DesiredQuery = Type.Object({
  after: Type.Integer({
    minimum: 0,
    maximum: 2_147_483_647,
    default: 0,
    description: "The version the listener has; the answer waits while it is still current.",
  }),
  wait: Type.Integer({ minimum: 0, maximum: 60, default: 30, description: "Seconds to wait for a change." }),
});
export type DesiredQuery = Static<typeof DesiredQuery>;

export const DesiredDeployment = Type.Object({
  deployment_id: Uuid,
  name: Type.String({ description: "The deployment's name (DNS-safe)." }),
  namespace: Type.String({ description: "listener_config.k8s_namespace" }),
  revision_id: Uuid,
  image: Type.String(),
  env: Type.Record(Type.String(), Type.String(), {
    description: "Decrypted secrets and the platform's variables (PORT).",
  }),
  secret_references: Type.Array(
    Type.Object({ name: Type.String(), secret_name: Type.String(), key: Type.String() }),
  ),
  resource_spec: Type.Record(Type.String(), Type.Unknown(), {
    description: "The revision's ResourceSpec, limits defaulted.",
  }),
  health_path: Type.String(),
  port: Type.Integer(),
  host: Type.String({ description: "Routing host: <name>.<apps domain>." }),
  deployment_type: Type.String(),
  registry_credentials: Type.Union([RegistryCredentials, Type.Null()], {
    description:
      "How the cluster pulls `image` when it is in Slipway's registry (the listener makes it an imagePullSecret): with registry token auth, pull only and for this repository, re-issued at half its life; null when the image is elsewhere or the registry needs no login.",
  }),
});
export type DesiredDeployment = Static<typeof DesiredDeployment>;

export const DesiredState = Type.Object({
  version: Type.Integer({ description: "Bumped whenever anything in `deployments` changes." }),
  listener_id: Uuid,
  deployments: Type.Array(DesiredDeployment, {
    description: "Everything the listener should run; what is not here must be pruned.",
  }),
  namespaces: Type.Array(Type.String(), {
    description:
      "The listener's namespaces (compute_config.k8s_namespaces): where it prunes, also after the last deployment of one is gone.",
  }),
});
export type DesiredState = Static<typeof DesiredState>;

export const REMOTE_STATES = ["applied", "progressing", "available", "failed"] as const;
export type RemoteState = (typeof REMOTE_STATES)[number];

export const StatusReport = Type.Object(
  {
    revisions: Type.Array(
      Type.Object(
        {
          revision_id: Uuid,
          state: StringEnum(REMOTE_STATES),
          reason: Type.Optional(Type.String({ maxLength: 10_000 })),
        },
        { additionalProperties: false },
      ),
      { maxItems: 1000, description: "An empty list is a heartbeat." },
    ),
  },
  { additionalProperties: false },
);
export type StatusReport = Static<typeof StatusReport>;
