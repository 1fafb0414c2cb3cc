// Pruning: deleting what this listener labelled and no longer wants, namespace by namespace. A
// database's volume (PVC, made by the StatefulSet controller, so never among the desired objects)
// stays while its StatefulSet does; its Secret (the password the data was made with) goes only
// together with the volume. A namespace the listener may not read (403) is reported and skipped.

import { objectKey } from "./applier.ts";
import { type Cluster, isForbidden } from "./cluster.ts";
import { LABEL_COMPONENT, LABEL_INSTANCE } from "./manifests/common.ts";
import type { K8sObject } from "./manifests/types.ts";

export interface PruneResult {
  deleted: string[];
  /** Namespaces that could not be pruned, with why (a 403, an unreachable server). */
  failed: { namespace: string; reason: string }[];
}

const instanceOf = (o: K8sObject) => o.metadata.labels?.[LABEL_INSTANCE] ?? "";
const isDatabase = (o: K8sObject) => o.metadata.labels?.[LABEL_COMPONENT] === "database";

/** What of `managed` (one namespace's) is to go, given the desired objects `keep`, in deletion order. */
export function prunable(
  managed: K8sObject[],
  keep: Map<string, K8sObject>,
): { now: K8sObject[]; secrets: K8sObject[] } {
  const keptDatabases = new Set([...keep.values()].filter((o) => o.kind === "StatefulSet").map(instanceOf));
  const now: K8sObject[] = [];
  const secrets: K8sObject[] = [];
  for (const o of managed) {
    if (keep.has(objectKey(o))) continue;
    if (o.kind === "PersistentVolumeClaim" && keptDatabases.has(instanceOf(o))) continue;
    if (o.kind === "Secret" && isDatabase(o)) secrets.push(o);
    else now.push(o);
  }
  return { now, secrets };
}

export async function prune(
  cluster: Cluster,
  namespaces: Iterable<string>,
  listenerId: string,
  keep: Map<string, K8sObject>,
  log: (line: string) => void,
): Promise<PruneResult> {
  const result: PruneResult = { deleted: [], failed: [] };
  for (const ns of namespaces) {
    try {
      const managed = await cluster.listManaged(ns, listenerId);
      const { now, secrets } = prunable(managed, keep);
      const gone = new Set<string>();
      for (const o of now) {
        log(`listener: pruning ${o.kind} ${ns}/${o.metadata.name}`);
        await cluster.delete(o);
        gone.add(objectKey(o));
        result.deleted.push(objectKey(o));
      }
      const volumesLeft = new Set(
        managed.filter((o) => o.kind === "PersistentVolumeClaim" && !gone.has(objectKey(o))).map(instanceOf),
      );
      for (const s of secrets) {
        if (volumesLeft.has(instanceOf(s))) continue;
        log(`listener: pruning ${s.kind} ${ns}/${s.metadata.name}`);
        await cluster.delete(s);
        result.deleted.push(objectKey(s));
      }
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      result.failed.push({ namespace: ns, reason });
      log(
        `listener: pruning in ${ns} ${isForbidden(err) ? "is not allowed" : "failed"}: ${reason}; the other namespaces go on`,
      );
    }
  }
  return result;
}
