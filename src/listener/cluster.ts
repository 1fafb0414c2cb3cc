// The cluster side, through @kubernetes/client-node: server-side apply (a server dry-run of every
// object first), listing and deleting what this listener labelled, and watching its Deployments.
// Why over 300 lines: every call to the API server in one place, each with its timeout and 403 handling.
import {
  ApiException,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  KubernetesObjectApi,
  makeInformer,
  type ObjectCache,
  PatchStrategy,
} from "@kubernetes/client-node";

export type ObjectCacheOf = Informer<KubernetesObject> & ObjectCache<KubernetesObject>;

import { LABEL_LISTENER, MANAGED_BY } from "./manifests/common.ts";
import type { K8sObject } from "./manifests/types.ts";

export const FIELD_MANAGER = "slipway";

/** The kinds a listener creates, so the kinds it lists when pruning. */
export const MANAGED_KINDS: readonly { apiVersion: string; kind: string }[] = [
  { apiVersion: "networking.k8s.io/v1", kind: "Ingress" },
  { apiVersion: "gateway.networking.k8s.io/v1", kind: "HTTPRoute" },
  { apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler" },
  { apiVersion: "policy/v1", kind: "PodDisruptionBudget" },
  { apiVersion: "apps/v1", kind: "Deployment" },
  { apiVersion: "apps/v1", kind: "StatefulSet" },
  { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy" },
  { apiVersion: "v1", kind: "Service" },
  // Made by the StatefulSet controller from the claim template (labelled): pruned after it.
  { apiVersion: "v1", kind: "PersistentVolumeClaim" },
  // Last: a database's Secret goes only once its volume is gone (listener/prune.ts).
  { apiVersion: "v1", kind: "Secret" },
];

/** Every API call gives up after this long (a hung connection must not stop the loop). */
export const CALL_TIMEOUT_MS = 30_000;

/** The field manager that holds `spec.replicas` while an HPA takes it over (the SSA docs' hand-over). */
export const HANDOVER_MANAGER = "handover-to-hpa";

/** `permanent`: the server refused the request itself (retrying the same objects cannot help). */
export class ClusterError extends Error {
  constructor(
    message: string,
    readonly permanent = false,
  ) {
    super(message);
  }
}

const REFUSALS = new Set([400, 403, 404, 409, 415, 422]);
const refused = (err: unknown) => err instanceof ApiException && REFUSALS.has(err.code);

type Obj = Record<string, unknown>;

/** The API server's own message (a Status body) rather than client-node's wrapper text. */
function describe(err: unknown): string {
  if (err instanceof ApiException) {
    const body = typeof err.body === "string" ? err.body : JSON.stringify(err.body);
    try {
      const status = JSON.parse(body) as { message?: string };
      if (status.message) return `${err.code}: ${status.message}`;
    } catch {
      // not JSON: the raw body says it
    }
    return `${err.code}: ${body.slice(0, 300)}`;
  }
  return err instanceof Error ? err.message : String(err);
}

const isNotFound = (err: unknown) => err instanceof ApiException && err.code === 404;
export const isForbidden = (err: unknown) =>
  (err instanceof ApiException && err.code === 403) ||
  (err instanceof ClusterError && / 403: /.test(err.message));

/** `call`, or a rejection once `ms` have passed. */
export async function withTimeout<T>(what: string, call: Promise<T>, ms = CALL_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ClusterError(`${what}: no answer from the API server in ${ms / 1000}s`)),
      ms,
    );
  });
  try {
    return await Promise.race([call, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** True when `manager`'s Apply entry of a live object owns `spec.replicas`. */
export function appliesReplicas(live: Obj | undefined, manager: string): boolean {
  const entries = ((live?.metadata as Obj | undefined)?.managedFields ?? []) as Obj[];
  return entries.some((e) => {
    if (e.manager !== manager || e.operation !== "Apply") return false;
    const spec = ((e.fieldsV1 as Obj | undefined)?.["f:spec"] ?? {}) as Obj;
    return "f:replicas" in spec;
  });
}

export const managedSelector = (listenerId: string) =>
  `app.kubernetes.io/managed-by=${MANAGED_BY},${LABEL_LISTENER}=${listenerId}`;

export class Cluster {
  private readonly api: KubernetesObjectApi;

  constructor(private readonly kc: KubeConfig) {
    this.api = KubernetesObjectApi.makeApiClient(kc);
  }

  private async patch(o: K8sObject, dryRun: boolean): Promise<void> {
    try {
      // force: this listener is the one owner of what it generates (a hand edit is taken back).
      await withTimeout(
        `apply ${o.kind} ${o.metadata.namespace}/${o.metadata.name}`,
        this.api.patch(
          o as KubernetesObject,
          undefined,
          dryRun ? "All" : undefined,
          FIELD_MANAGER,
          true,
          PatchStrategy.ServerSideApply,
        ),
      );
    } catch (err) {
      if (err instanceof ClusterError) throw err;
      throw new ClusterError(
        `${dryRun ? "dry-run of " : ""}${o.kind} ${o.metadata.namespace}/${o.metadata.name}: ${describe(err)}`,
        refused(err),
      );
    }
  }

  /** Dry-runs every object, then applies them: one the server refuses stops the set before any change. */
  async apply(objects: K8sObject[]): Promise<void> {
    for (const o of objects) await this.patch(o, true);
    for (const o of objects) await this.patch(o, false);
  }

  /**
   * Before an apply without `spec.replicas` of a Deployment whose replicas this listener applied:
   * `handover-to-hpa` applies the current count first, so dropping the field does not reset it
   * to 1 before the HPA acts (server-side apply docs, "Transferring ownership"). A conflict means
   * the HPA owns it already: nothing to hand over.
   */
  async handOverReplicas(o: K8sObject): Promise<void> {
    const { namespace = "", name } = o.metadata;
    const live = await this.read(o.apiVersion, o.kind, namespace, name);
    if (!appliesReplicas(live, FIELD_MANAGER)) return;
    const replicas = (live?.spec as Obj | undefined)?.replicas;
    if (typeof replicas !== "number") return;
    const keep = {
      apiVersion: o.apiVersion,
      kind: o.kind,
      metadata: { name, namespace },
      spec: { replicas },
    };
    try {
      await withTimeout(
        `hand over replicas of ${o.kind} ${namespace}/${name}`,
        this.api.patch(
          keep as KubernetesObject,
          undefined,
          undefined,
          HANDOVER_MANAGER,
          false,
          PatchStrategy.ServerSideApply,
        ),
      );
    } catch (err) {
      if (err instanceof ApiException && err.code === 409) return;
      throw new ClusterError(
        `hand over replicas of ${o.kind} ${namespace}/${name}: ${describe(err)}`,
        refused(err),
      );
    }
  }

  /** Merge-patches one object (a PVC's storage request); a refusal is permanent. */
  async mergePatch(
    apiVersion: string,
    kind: string,
    namespace: string,
    name: string,
    patch: Obj,
  ): Promise<void> {
    const body = { apiVersion, kind, metadata: { name, namespace }, ...patch };
    try {
      await withTimeout(
        `patch ${kind} ${namespace}/${name}`,
        this.api.patch(
          body as KubernetesObject,
          undefined,
          undefined,
          FIELD_MANAGER,
          undefined,
          PatchStrategy.MergePatch,
        ),
      );
    } catch (err) {
      if (err instanceof ClusterError) throw err;
      throw new ClusterError(`patch ${kind} ${namespace}/${name}: ${describe(err)}`, refused(err));
    }
  }

  /** Everything this listener labelled in `namespace`, of every managed kind the server serves. */
  async listManaged(namespace: string, listenerId: string): Promise<K8sObject[]> {
    const out: K8sObject[] = [];
    for (const k of MANAGED_KINDS) {
      try {
        const page = await withTimeout(
          `list ${k.kind} in ${namespace}`,
          this.api.list(
            k.apiVersion,
            k.kind,
            namespace,
            undefined,
            undefined,
            undefined,
            undefined,
            managedSelector(listenerId),
          ),
        );
        for (const item of page.items)
          out.push({ ...(item as unknown as K8sObject), apiVersion: k.apiVersion, kind: k.kind });
      } catch (err) {
        // A cluster without the Gateway API has no HTTPRoute kind: nothing of it to prune.
        if (
          isNotFound(err) ||
          (err instanceof Error &&
            /Unrecognized API version and kind|does not have a resource/.test(err.message))
        )
          continue;
        if (err instanceof ClusterError) throw err;
        throw new ClusterError(`list ${k.kind} in ${namespace}: ${describe(err)}`, refused(err));
      }
    }
    return out;
  }

  async delete(o: K8sObject): Promise<void> {
    try {
      await withTimeout(
        `delete ${o.kind} ${o.metadata.namespace}/${o.metadata.name}`,
        this.api.delete(o as KubernetesObject, undefined, undefined, undefined, undefined, "Background"),
      );
    } catch (err) {
      if (err instanceof ClusterError) throw err;
      if (!isNotFound(err))
        throw new ClusterError(
          `delete ${o.kind} ${o.metadata.namespace}/${o.metadata.name}: ${describe(err)}`,
        );
    }
  }

  /** One object, or undefined when it does not exist. */
  async read(apiVersion: string, kind: string, namespace: string, name: string): Promise<Obj | undefined> {
    try {
      return (await withTimeout(
        `read ${kind} ${namespace}/${name}`,
        this.api.read({ apiVersion, kind, metadata: { name, namespace } }),
      )) as unknown as Obj;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (err instanceof ClusterError) throw err;
      throw new ClusterError(`read ${kind} ${namespace}/${name}: ${describe(err)}`);
    }
  }

  async pods(namespace: string, labelSelector: string): Promise<Obj[]> {
    try {
      const page = await withTimeout(
        `list pods in ${namespace}`,
        this.api.list("v1", "Pod", namespace, undefined, undefined, undefined, undefined, labelSelector),
      );
      return page.items as unknown as Obj[];
    } catch (err) {
      if (err instanceof ClusterError) throw err;
      throw new ClusterError(`list pods in ${namespace}: ${describe(err)}`);
    }
  }

  /**
   * A cache of this listener's Deployments or Pods in `namespace`: listed once, then kept by a watch
   * from that list's resourceVersion (client-node's informer), so judging rollouts costs no request.
   */
  cache(kind: "Deployment" | "Pod", namespace: string, listenerId: string): ObjectCacheOf {
    const ns = encodeURIComponent(namespace);
    const apiVersion = kind === "Deployment" ? "apps/v1" : "v1";
    const path =
      kind === "Deployment" ? `/apis/apps/v1/namespaces/${ns}/deployments` : `/api/v1/namespaces/${ns}/pods`;
    const selector = managedSelector(listenerId);
    const list = () =>
      withTimeout(
        `list ${kind} in ${namespace}`,
        this.api.list(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, selector),
      ) as Promise<KubernetesListObject<KubernetesObject>>;
    return makeInformer(this.kc, path, list, selector);
  }
}
