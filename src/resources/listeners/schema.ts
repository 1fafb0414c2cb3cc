import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, OrNull, QueryLimit, QueryOffset, StringEnum, Uuid } from "../../core/shapes.ts";

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
