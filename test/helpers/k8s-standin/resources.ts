/** The kinds the stand-in serves, and the discovery documents kubectl and client-node read. */

export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  /** Writes to the object itself ignore `status`; it is written through `/status` (as the kubelet and controllers do). */
  statusSubresource: boolean;
}

const r = (
  group: string,
  version: string,
  kind: string,
  plural: string,
  statusSubresource = false,
  namespaced = true,
): ResourceType => ({ group, version, kind, plural, namespaced, statusSubresource });

export const RESOURCES: ResourceType[] = [
  r("", "v1", "Namespace", "namespaces", true, false),
  r("", "v1", "Secret", "secrets"),
  r("", "v1", "ConfigMap", "configmaps"),
  r("", "v1", "Service", "services", true),
  r("", "v1", "ServiceAccount", "serviceaccounts"),
  r("", "v1", "Pod", "pods", true),
  r("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true),
  r("", "v1", "Event", "events"),
  r("apps", "v1", "Deployment", "deployments", true),
  r("apps", "v1", "StatefulSet", "statefulsets", true),
  r("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true),
  r("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true),
  r("networking.k8s.io", "v1", "Ingress", "ingresses", true),
  r("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies"),
  r("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes", true),
  r("rbac.authorization.k8s.io", "v1", "Role", "roles"),
  r("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
];

export const apiVersionOf = (t: ResourceType) => (t.group ? `${t.group}/${t.version}` : t.version);

export function findResource(group: string, version: string, plural: string): ResourceType | undefined {
  return RESOURCES.find((t) => t.group === group && t.version === version && t.plural === plural);
}

const VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"];

export function resourceList(group: string, version: string): object | undefined {
  const types = RESOURCES.filter((t) => t.group === group && t.version === version);
  if (types.length === 0) return undefined;
  const resources = types.flatMap((t) => {
    const main = {
      name: t.plural,
      singularName: t.kind.toLowerCase(),
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: VERBS,
    };
    const status = {
      name: `${t.plural}/status`,
      singularName: "",
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: ["get", "patch", "update"],
    };
    return t.statusSubresource ? [main, status] : [main];
  });
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: group ? `${group}/${version}` : version,
    resources,
  };
}

export function groupList(): object {
  const groups = new Map<string, string[]>();
  for (const t of RESOURCES) {
    if (!t.group) continue;
    const versions = groups.get(t.group) ?? [];
    if (!versions.includes(t.version)) versions.push(t.version);
    groups.set(t.group, versions);
  }
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: [...groups].map(([name, versions]) => {
      const list = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
      return { name, versions: list, preferredVersion: list[0] };
    }),
  };
}

const gvPath = (t: ResourceType) => (t.group ? `apis/${t.group}/${t.version}` : `api/${t.version}`);

/** /openapi/v3: where each group-version's document is (kubectl reads it to learn what the server checks). */
export function openApiRoot(): object {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const t of RESOURCES) paths[gvPath(t)] = { serverRelativeURL: `/openapi/v3/${gvPath(t)}` };
  return { paths };
}

/**
 * A group-version's OpenAPI v3 document, reduced to the write operations and their
 * `fieldValidation` parameter: kubectl then leaves validation to the server (as against any
 * server since 1.27) instead of downloading schemas. The server validates with the official ones.
 */
export function openApiGroupVersion(path: string): object | undefined {
  const types = RESOURCES.filter((t) => gvPath(t) === path);
  if (types.length === 0) return undefined;
  const paths: Record<string, object> = {};
  for (const t of types) {
    const gvk = { group: t.group, version: t.version, kind: t.kind };
    const op = (action: string) => ({
      operationId: `${action}${t.kind}`,
      parameters: [{ name: "fieldValidation", in: "query", schema: { type: "string", uniqueItems: true } }],
      responses: { "200": { description: "OK" } },
      "x-kubernetes-action": action,
      "x-kubernetes-group-version-kind": gvk,
    });
    const base = t.namespaced ? `/${path}/namespaces/{namespace}/${t.plural}` : `/${path}/${t.plural}`;
    paths[base] = { post: op("post") };
    paths[`${base}/{name}`] = { put: op("put"), patch: op("patch") };
  }
  return { openapi: "3.0.0", info: { title: "Kubernetes", version: "v1.32.0" }, paths };
}
