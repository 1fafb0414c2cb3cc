// What is applied for one deployment, and only what changed: a hash of each object as last
// applied is kept, and unchanged objects are skipped (a full re-apply runs now and then, so a
// hand edit is still taken back). Before applying, the two cases server-side apply alone gets
// wrong: replicas handed over to an HPA, and a database whose claim template cannot change.
import { createHash } from "node:crypto";
import { type Cluster, ClusterError } from "./cluster.ts";
import { claimName } from "./manifests/database.ts";
import type { K8sObject } from "./manifests/types.ts";

type Obj = Record<string, unknown>;

export const objectKey = (o: Pick<K8sObject, "apiVersion" | "kind" | "metadata">) =>
  `${o.apiVersion}/${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;

const hashOf = (o: K8sObject) => createHash("sha256").update(JSON.stringify(o)).digest("base64url");

const storageOf = (template: Obj | undefined): string | undefined =>
  (((template?.spec as Obj | undefined)?.resources as Obj | undefined)?.requests as Obj | undefined)
    ?.storage as string | undefined;

/** Gi of a storage quantity ("10Gi" → 10); NaN for anything else. */
const gi = (q: string | undefined) => {
  const m = /^(\d+)Gi$/.exec(q ?? "");
  return m ? Number(m[1]) : Number.NaN;
};

export class Applier {
  private readonly applied = new Map<string, { hash: string; replicas: boolean }>();

  constructor(private readonly cluster: Cluster) {}

  /** Forgets every hash: the next apply sends everything again. */
  forgetAll(): void {
    this.applied.clear();
  }

  forget(key: string): void {
    this.applied.delete(key);
  }

  /** The objects whose hash differs from the last applied one. */
  changed(objects: K8sObject[]): K8sObject[] {
    return objects.filter((o) => this.applied.get(objectKey(o))?.hash !== hashOf(o));
  }

  /** Applies what changed of one deployment's objects; returns how many were sent. */
  async apply(objects: K8sObject[]): Promise<number> {
    const changed = this.changed(objects);
    if (changed.length === 0) return 0;
    const prepared: K8sObject[] = [];
    for (const o of changed) prepared.push(await this.prepare(o));
    await this.cluster.apply(prepared);
    for (const o of changed) {
      const spec = (o.spec ?? {}) as Obj;
      this.applied.set(objectKey(o), { hash: hashOf(o), replicas: spec.replicas !== undefined });
    }
    return changed.length;
  }

  private async prepare(o: K8sObject): Promise<K8sObject> {
    const spec = (o.spec ?? {}) as Obj;
    if (o.kind === "Deployment" && spec.replicas === undefined) {
      // Known to have been applied without replicas already: nothing to hand over.
      if (this.applied.get(objectKey(o))?.replicas !== false) await this.cluster.handOverReplicas(o);
    }
    if (o.kind === "StatefulSet") return this.keepClaimTemplate(o);
    return o;
  }

  /**
   * A StatefulSet's volumeClaimTemplates cannot change: the live ones are sent again, and a
   * larger `db_storage_gi` is a patch of the PVC itself (refused where its StorageClass cannot
   * expand: then the revision fails with the cluster's reason). A smaller one is not applied (the
   * API refuses it; a claim never shrinks).
   */
  private async keepClaimTemplate(o: K8sObject): Promise<K8sObject> {
    const { namespace = "", name } = o.metadata;
    const live = await this.cluster.read("apps/v1", "StatefulSet", namespace, name);
    if (!live) return o;
    const liveTemplates = ((live.spec as Obj | undefined)?.volumeClaimTemplates ?? []) as Obj[];
    const wanted = (((o.spec as Obj).volumeClaimTemplates ?? []) as Obj[])[0];
    const want = storageOf(wanted);
    const have = storageOf(liveTemplates[0]);
    if (want && gi(want) > gi(have)) {
      const claim = claimName(name);
      const pvc = await this.cluster.read("v1", "PersistentVolumeClaim", namespace, claim);
      if (pvc && gi(storageOf(pvc)) < gi(want)) {
        try {
          await this.cluster.mergePatch("v1", "PersistentVolumeClaim", namespace, claim, {
            spec: { resources: { requests: { storage: want } } },
          });
        } catch (err) {
          const message = err instanceof Error ? err.message : String(err);
          throw new ClusterError(
            `growing the database volume to ${want}: ${message}`,
            err instanceof ClusterError && err.permanent,
          );
        }
      }
    }
    return { ...o, spec: { ...(o.spec as Obj), volumeClaimTemplates: liveTemplates } };
  }
}
