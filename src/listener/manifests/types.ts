/** What the manifests are made with besides the desired state (src/protocol/listener.ts). */

/** How routing is done in this cluster: an Ingress of a class, or an HTTPRoute on a Gateway. */
export type Routing =
  | { kind: "ingress"; className?: string }
  | { kind: "gateway"; gatewayName: string; gatewayNamespace?: string }
  | { kind: "none" };

/** The Pod Security Standard level app pods are made to pass (`--pod-security`). */
export type PodSecurity = "baseline" | "restricted";

export interface ManifestOptions {
  listenerId: string;
  routing: Routing;
  /** Default "baseline"; "restricted" adds runAsNonRoot and a runAsUser to app pods. */
  podSecurity?: PodSecurity;
  /** The ingress controller's namespace, whose pods the NetworkPolicy lets in; none: the deployment's own pods only. */
  ingressNamespace?: string;
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
