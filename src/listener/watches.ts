// Per namespace, caches of this listener's Deployments and Pods kept by watches (list once, then
// watch from its resourceVersion): rollout judging reads them and makes no request. A watch that
// fails (a 403, a dropped stream) is started again after a delay doubling up to a minute; until a
// cache has its first list, readers fall back to asking the API server.
import type { Cluster, ObjectCacheOf } from "./cluster.ts";
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_REVISION } from "./manifests/common.ts";

type Obj = Record<string, unknown>;

interface NamespaceCaches {
  deployments: ObjectCacheOf;
  pods: ObjectCacheOf;
  synced: { deployments: boolean; pods: boolean };
}

export class Watches {
  private readonly byNamespace = new Map<string, NamespaceCaches>();
  private readonly delay = new Map<string, number>();
  /** Pods by instance label, per namespace; dropped on any pod event. */
  private readonly podIndex = new Map<string, Map<string, Obj[]>>();
  private stopped = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly listenerId: string,
    private readonly onChange: () => void,
    private readonly log: (line: string) => void,
    /** A Deployment of this listener was deleted (by it when pruning, or by hand). */
    private readonly onDeploymentDeleted: (namespace: string, name: string) => void = () => {},
  ) {}

  ensure(namespace: string): void {
    if (this.stopped || this.byNamespace.has(namespace)) return;
    const caches: NamespaceCaches = {
      deployments: this.cluster.cache("Deployment", namespace, this.listenerId),
      pods: this.cluster.cache("Pod", namespace, this.listenerId),
      synced: { deployments: false, pods: false },
    };
    this.byNamespace.set(namespace, caches);
    for (const part of ["deployments", "pods"] as const) {
      const informer = caches[part];
      for (const verb of ["add", "update", "delete"] as const)
        informer.on(verb, (obj) => {
          if (part === "pods") this.podIndex.delete(namespace);
          else if (verb === "delete") this.onDeploymentDeleted(namespace, obj.metadata?.name ?? "");
          this.onChange();
        });
      informer.on("error", (err: unknown) => {
        caches.synced[part] = false;
        if (this.stopped) return;
        const wait = Math.min((this.delay.get(namespace) ?? 500) * 2, 60_000);
        this.delay.set(namespace, wait);
        this.log(
          `listener: watch of ${part} in ${namespace} ended: ${err instanceof Error ? err.message : String(err)}; again in ${wait / 1000}s`,
        );
        setTimeout(() => this.start(caches, part, namespace), wait).unref();
      });
      this.start(caches, part, namespace);
    }
  }

  private start(caches: NamespaceCaches, part: "deployments" | "pods", namespace: string): void {
    if (this.stopped) return;
    caches[part].start().then(
      () => {
        caches.synced[part] = true;
        this.podIndex.delete(namespace);
        this.delay.delete(namespace);
        this.onChange();
      },
      // The informer reports the failure through its error callback too.
      () => {},
    );
  }

  /** A Deployment from the cache; undefined when unknown; null when the cache has not listed yet. */
  deployment(namespace: string, name: string): Obj | undefined | null {
    const c = this.byNamespace.get(namespace);
    if (!c?.synced.deployments) return null;
    return c.deployments.get(name, namespace) as unknown as Obj | undefined;
  }

  /**
   * The app's pods (components api and queue) of every revision of one instance, from the cache;
   * null when it has not listed yet. An index by instance, rebuilt only after pod events, keeps
   * judging every revision linear in their number.
   */
  instancePods(namespace: string, instance: string): Obj[] | null {
    const c = this.byNamespace.get(namespace);
    if (!c?.synced.pods) return null;
    let index = this.podIndex.get(namespace);
    if (!index) {
      index = new Map();
      for (const p of c.pods.list(namespace)) {
        const value = p.metadata?.labels?.[LABEL_INSTANCE];
        const component = p.metadata?.labels?.[LABEL_COMPONENT];
        if (value === undefined || (component !== "api" && component !== "queue")) continue;
        index.set(value, [...(index.get(value) ?? []), p as unknown as Obj]);
      }
      this.podIndex.set(namespace, index);
    }
    return index.get(instance) ?? [];
  }

  /** The app's pods (components api and queue) of one revision, from the cache; null before its first list. */
  revisionPods(namespace: string, instance: string, revisionId: string): Obj[] | null {
    return (
      this.instancePods(namespace, instance)?.filter(
        (p) =>
          ((p.metadata as Obj | undefined)?.labels as Record<string, string> | undefined)?.[
            LABEL_REVISION
          ] === revisionId,
      ) ?? null
    );
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.byNamespace.values()) {
      void c.deployments.stop();
      void c.pods.stop();
    }
    this.byNamespace.clear();
  }
}
