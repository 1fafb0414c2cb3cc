/** The listener protocol's shapes (README "Running on Kubernetes" documents them). */

export interface SecretReference {
  /** Environment variable name in the app container. */
  name: string;
  /** The Kubernetes Secret in the deployment's namespace. */
  secret_name: string;
  key: string;
}

/** One deployment of `GET /v2/listeners/{id}/desired`. */
export interface DesiredDeployment {
  deployment_id: string;
  name: string;
  namespace: string;
  revision_id: string;
  image: string;
  env: Record<string, string>;
  secret_references: SecretReference[];
  resource_spec: Record<string, unknown> | null;
  health_path: string;
  port: number;
  host: string | null;
  deployment_type: string;
  /** How the cluster pulls `image` from Slipway's registry (an imagePullSecret); absent or null: no login. */
  registry_credentials?: RegistryCredentials | null;
}

export interface RegistryCredentials {
  registry: string;
  username: string;
  password: string;
  expires_at: string | null;
}

export interface DesiredState {
  version: number;
  listener_id: string;
  deployments: DesiredDeployment[];
}

export type RevisionState = "applied" | "progressing" | "available" | "failed";

export interface RevisionReport {
  revision_id: string;
  state: RevisionState;
  reason?: string;
}

/** How routing is done in this cluster: an Ingress of a class, or an HTTPRoute on a Gateway. */
export type Routing =
  | { kind: "ingress"; className?: string }
  | { kind: "gateway"; gatewayName: string; gatewayNamespace?: string }
  | { kind: "none" };

export interface ManifestOptions {
  listenerId: string;
  routing: Routing;
  /** Image of the Postgres StatefulSet made for `db_*` specs. */
  postgresImage: string;
  /** Image of the Redis made for `redis_*` specs. */
  redisImage: string;
}

/** A Kubernetes object as sent to the API: loosely typed, validated in tests by kubernetes-models. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}
