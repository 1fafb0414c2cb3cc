// The listener protocol, declared once: what `GET /v2/listeners/{id}/desired` answers and what
// `POST /v2/listeners/{id}/status` takes (docs/kubernetes.md). The server validates
// and documents with these schemas; the listener reads and sends their types.
import { type Static, Type } from "@sinclair/typebox";
import { StringEnum, Uuid } from "../core/shapes.ts";

/** The port an app listens on in its pod (given to it as PORT), as on this server's containers. */
export const APP_PORT = 8080;
/** Readiness and liveness probes of an app ask this path unless the revision names its own. */
export const HEALTH_PATH = "/";

/** A deployment's routing host: `<name>.<apps domain>`. */
export const hostOf = (settings: { appsDomain: string }, name: string) => `${name}.${settings.appsDomain}`;

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

/** How a listener's cluster pulls an image from Slipway's registry (the desired state's `registry_credentials`). */
export const RegistryCredentials = Type.Object({
  registry: Type.String({ description: "host[:port] of SLIPWAY_REGISTRY_URL." }),
  username: Type.String(),
  password: Type.String(),
  expires_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
    description: "When the password stops working; the desired state hands out a new one at half its life.",
  }),
});
export type RegistryCredentials = Static<typeof RegistryCredentials>;

/** An environment variable of the app container read from a Kubernetes Secret of its namespace. */
export const SecretReference = Type.Object({
  name: Type.String(),
  secret_name: Type.String(),
  key: Type.String(),
});
export type SecretReference = Static<typeof SecretReference>;

export const DesiredDeployment = Type.Object({
  deployment_id: Uuid,
  name: Type.String({ description: "The deployment's name (DNS-safe)." }),
  namespace: Type.String({ description: "listener_config.k8s_namespace" }),
  revision_id: Uuid,
  image: Type.String(),
  env: Type.Record(Type.String(), Type.String(), {
    description: "Decrypted secrets and the platform's variables (PORT).",
  }),
  secret_references: Type.Array(SecretReference),
  // Raw on the wire: the listener resolves it with deployment_type (core/spec) before reading it.
  resource_spec: Type.Record(Type.String(), Type.Unknown(), {
    description: "The revision's ResourceSpec, limits defaulted.",
  }),
  health_path: Type.String(),
  port: Type.Integer(),
  host: Type.String({ description: "Routing host: <name>.<apps domain>." }),
  deployment_type: Type.String(),
  workspace_id: Type.Optional(
    Type.String({
      format: "uuid",
      description:
        "The deployment's workspace: labelled on every object (slipway.dev/workspace-id); absent from older servers.",
    }),
  ),
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
  pod_reports: Type.Optional(
    Type.Boolean({
      description: "This server takes `deployments` (pods) in status reports; absent from older servers.",
    }),
  ),
  namespaces: Type.Array(Type.String(), {
    description:
      "The listener's namespaces (compute_config.k8s_namespaces): where it prunes, also after the last deployment of one is gone.",
  }),
});
export type DesiredState = Static<typeof DesiredState>;

/** A revision's state in the cluster, as the listener reports it. */
export const REVISION_STATES = ["applied", "progressing", "available", "failed"] as const;
export type RevisionState = (typeof REVISION_STATES)[number];

export const RevisionReport = Type.Object(
  {
    revision_id: Uuid,
    state: StringEnum(REVISION_STATES),
    reason: Type.Optional(Type.String({ maxLength: 10_000 })),
  },
  { additionalProperties: false },
);
export type RevisionReport = Static<typeof RevisionReport>;

/**
 * A pod's state after the listener's judgement: `ready`; `starting` (not ready yet, also pending
 * on an image pull, a scheduler with no room or a missing Secret: `reason` says); `restarting` (a
 * container exited and runs again); `crash_looping` (CrashLoopBackOff); `refused` (never created:
 * admission or a ResourceQuota refused it; its name is then its workload's); `failed` (the pod
 * ended for good, e.g. evicted).
 */
export const POD_STATES = ["ready", "starting", "restarting", "crash_looping", "refused", "failed"] as const;
export type PodState = (typeof POD_STATES)[number];
export const POD_COMPONENTS = ["api", "queue"] as const;

export const PodReport = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 253 }),
    revision_id: Uuid,
    component: StringEnum(POD_COMPONENTS),
    state: StringEnum(POD_STATES),
    restarts: Type.Integer({ minimum: 0, maximum: 2_147_483_647 }),
    started_at: Type.Optional(
      Type.String({ format: "date-time", description: "When its app container last started." }),
    ),
    reason: Type.Optional(
      Type.String({
        maxLength: 2000,
        description: "Why it is not ready: the container state's or event's reason and message.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type PodReport = Static<typeof PodReport>;

/** One deployment's pods (API and queue workers of every revision still there), sent when they change. */
export const DeploymentPodsReport = Type.Object(
  {
    deployment_id: Uuid,
    revision_id: Type.String({
      format: "uuid",
      description: "The revision the listener runs for it (desired).",
    }),
    serving: Type.Boolean({ description: "Whether an API pod of `revision_id` is ready." }),
    reason: Type.Optional(
      Type.String({
        maxLength: 2000,
        description: "When not serving: why (the first not-ready pod's reason).",
      }),
    ),
    pods: Type.Array(PodReport, { maxItems: 1000 }),
  },
  { additionalProperties: false },
);
export type DeploymentPodsReport = Static<typeof DeploymentPodsReport>;

export const StatusReport = Type.Object(
  {
    revisions: Type.Array(RevisionReport, { maxItems: 1000, description: "An empty list is a heartbeat." }),
    deployments: Type.Optional(
      Type.Array(DeploymentPodsReport, {
        maxItems: 1000,
        description:
          "Deployments whose pods changed since the last report. Older listeners leave it out; a listener sends it only to a server whose desired state says `pod_reports: true` (older servers would drop it unread).",
      }),
    ),
  },
  { additionalProperties: false },
);
export type StatusReport = Static<typeof StatusReport>;
