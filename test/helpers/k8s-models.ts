// Checks objects against the official Kubernetes OpenAPI schemas (kubernetes-models), by kind.
import { HTTPRoute } from "@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { Ingress, NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import {
  ConfigMap,
  Event,
  Namespace,
  PersistentVolumeClaim,
  Pod,
  Secret,
  Service,
  ServiceAccount,
} from "kubernetes-models/v1";

interface Validatable {
  validate(): void;
}
type Model = new (data: never) => Validatable;

const MODELS: Record<string, Model> = {
  "v1/Secret": Secret,
  "v1/Service": Service,
  "v1/Pod": Pod,
  "v1/ConfigMap": ConfigMap,
  "v1/Event": Event,
  "v1/Namespace": Namespace,
  "v1/ServiceAccount": ServiceAccount,
  "v1/PersistentVolumeClaim": PersistentVolumeClaim,
  "apps/v1/Deployment": Deployment,
  "apps/v1/StatefulSet": StatefulSet,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "networking.k8s.io/v1/Ingress": Ingress,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "gateway.networking.k8s.io/v1/HTTPRoute": HTTPRoute,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
};

/** Throws with the schema's message when `obj` is not a valid object of its apiVersion/kind. */
export function validateManifest(obj: { apiVersion?: unknown; kind?: unknown }): void {
  const key = `${String(obj.apiVersion)}/${String(obj.kind)}`;
  const model = MODELS[key];
  if (!model) throw new Error(`no schema known for ${key}`);
  new model(obj as never).validate();
}

/** The kinds validateManifest knows (the stand-in API server serves these). */
export const KNOWN_KINDS = Object.keys(MODELS);
