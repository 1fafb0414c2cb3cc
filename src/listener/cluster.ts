// The cluster side, through @kubernetes/client-node: server-side apply (a server dry-run of every
// object first), listing and deleting what this listener labelled, and watching its Deployments.
import {
  ApiException,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  Watch,
} from "@kubernetes/client-node";
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
  { apiVersion: "v1", kind: "Service" },
  { apiVersion: "v1", kind: "Secret" },
];

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
      await this.api.patch(
        o as KubernetesObject,
        undefined,
        dryRun ? "All" : undefined,
        FIELD_MANAGER,
        true,
        PatchStrategy.ServerSideApply,
      );
    } catch (err) {
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

  /** Everything this listener labelled in `namespace`, of every managed kind the server serves. */
  async listManaged(namespace: string, listenerId: string): Promise<K8sObject[]> {
    const out: K8sObject[] = [];
    for (const k of MANAGED_KINDS) {
      try {
        const page = await this.api.list(
          k.apiVersion,
          k.kind,
          namespace,
          undefined,
          undefined,
          undefined,
          undefined,
          managedSelector(listenerId),
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
        throw new ClusterError(`list ${k.kind} in ${namespace}: ${describe(err)}`);
      }
    }
    return out;
  }

  async delete(o: K8sObject): Promise<void> {
    try {
      await this.api.delete(o as KubernetesObject, undefined, undefined, undefined, undefined, "Background");
    } catch (err) {
      if (!isNotFound(err))
        throw new ClusterError(
          `delete ${o.kind} ${o.metadata.namespace}/${o.metadata.name}: ${describe(err)}`,
        );
    }
  }

  /** One object, or undefined when it does not exist. */
  async read(apiVersion: string, kind: string, namespace: string, name: string): Promise<Obj | undefined> {
    try {
      return (await this.api.read({ apiVersion, kind, metadata: { name, namespace } })) as unknown as Obj;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw new ClusterError(`read ${kind} ${namespace}/${name}: ${describe(err)}`);
    }
  }

  async pods(namespace: string, labelSelector: string): Promise<Obj[]> {
    try {
      const page = await this.api.list(
        "v1",
        "Pod",
        namespace,
        undefined,
        undefined,
        undefined,
        undefined,
        labelSelector,
      );
      return page.items as unknown as Obj[];
    } catch (err) {
      throw new ClusterError(`list pods in ${namespace}: ${describe(err)}`);
    }
  }

  /** Watches this listener's Deployments in `namespace`; `onEnd` is called when the stream ends. */
  async watchDeployments(
    namespace: string,
    listenerId: string,
    onChange: () => void,
    onEnd: (err: unknown) => void,
  ): Promise<AbortController> {
    return new Watch(this.kc).watch(
      `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/deployments`,
      { labelSelector: managedSelector(listenerId), allowWatchBookmarks: true },
      () => onChange(),
      onEnd,
    );
  }
}
