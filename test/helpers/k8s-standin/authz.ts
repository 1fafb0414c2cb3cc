// RBAC as the API server applies it, from the Roles and RoleBindings stored in the stand-in (the
// tests apply deploy/kubernetes/listener-rbac.yaml with kubectl): a request of a known token's
// user is allowed only when a RoleBinding of its namespace grants the verb on the resource.
import type { Obj } from "./fields.ts";
import { findResource } from "./resources.ts";
import { ApiError, type ObjectStore } from "./store.ts";

export interface Request {
  user: string;
  verb: string;
  group: string;
  /** `deployments` or `deployments/scale`. */
  resource: string;
  namespace?: string;
  name?: string;
}

const list = (v: unknown): Obj[] => (Array.isArray(v) ? (v as Obj[]) : []);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
const query = { labelSelector: null, fieldSelector: null };

function bound(subject: Obj, user: string, namespace: string): boolean {
  if (subject.kind === "User") return subject.name === user;
  if (subject.kind === "ServiceAccount")
    return user === `system:serviceaccount:${String(subject.namespace ?? namespace)}:${String(subject.name)}`;
  return false;
}

/** True when a Role bound to `r.user` in `r.namespace` grants the request. */
export function allowed(store: ObjectStore, r: Request): boolean {
  if (!r.namespace) return false;
  const bindings = store.list(must("rbac.authorization.k8s.io", "v1", "rolebindings"), r.namespace, query);
  for (const b of bindings) {
    if (!list(b.subjects).some((s) => bound(s, r.user, r.namespace ?? ""))) continue;
    const ref = (b.roleRef ?? {}) as Obj;
    if (ref.kind !== "Role") continue;
    let role: Obj;
    try {
      role = store.get(must("rbac.authorization.k8s.io", "v1", "roles"), r.namespace, String(ref.name));
    } catch {
      continue;
    }
    for (const rule of list(role.rules)) {
      const groups = strings(rule.apiGroups);
      const resources = strings(rule.resources);
      const verbs = strings(rule.verbs);
      const names = strings(rule.resourceNames);
      if (
        (groups.includes(r.group) || groups.includes("*")) &&
        (resources.includes(r.resource) || resources.includes("*")) &&
        (verbs.includes(r.verb) || verbs.includes("*")) &&
        (names.length === 0 || (r.name !== undefined && names.includes(r.name)))
      )
        return true;
    }
  }
  return false;
}

function must(group: string, version: string, plural: string) {
  const t = findResource(group, version, plural);
  if (!t) throw new Error(`stand-in: no ${plural}`);
  return t;
}

/** Throws the API server's 403 when the request is not allowed. */
export function authorize(store: ObjectStore, r: Request): void {
  if (allowed(store, r)) return;
  const what = r.name ? `${r.resource} "${r.name}"` : r.resource;
  const where = r.namespace ? ` in the namespace "${r.namespace}"` : " at the cluster scope";
  throw new ApiError(
    403,
    "Forbidden",
    `${what} is forbidden: User "${r.user}" cannot ${r.verb} resource "${r.resource}" in API group "${r.group}"${where}`,
  );
}
