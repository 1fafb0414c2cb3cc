// Why over 300 lines: three controllers and the kubelet, each a short method, over one store.
// A tiny stand-in for the deployment, StatefulSet and garbage collector controllers and the
// kubelet: pods from templates (Pod Security admission on their namespace), PVCs from volume claim
// templates, pod states chosen per image (ready, crash-looping, or crashing once before ready),
// the workloads' status as the real controllers write it, and owned objects deleted with their
// owner. Enough to test rollouts and what happens after them; no scheduling, no real processes.
import { createHash } from "node:crypto";
import type { Obj } from "./fields.ts";
import { admitPod } from "./pod-security.ts";
import { findResource, type ResourceType } from "./resources.ts";
import { ApiError, type ObjectStore } from "./store.ts";

/**
 * What a pod of an image does: "ready", "crash" (CrashLoopBackOff for ever), "crash-once", or
 * "unschedulable" (no node has room: Pending, PodScheduled False).
 */
export type Behaviour = "ready" | "crash" | "crash-once" | "unschedulable";

export interface ControllerOptions {
  /** By image; default "ready". */
  behaviour?: (image: string) => Behaviour;
}

const MANAGER = "kube-controller-manager";
const q = { labelSelector: null, fieldSelector: null };
const obj = (v: unknown): Obj => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(obj) : []);
const meta = (o: Obj) => obj(o.metadata);
const T = (plural: string, group = "", version = "v1"): ResourceType => {
  const t = findResource(group, version, plural);
  if (!t) throw new Error(plural);
  return t;
};
const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

export class PodController {
  private timer: NodeJS.Timeout | undefined;
  private readonly owned = new Map<string, Obj[]>();
  private seen = -1;
  private again = false;
  /** Pods that crashed once already ("crash-once" pods are ready on their second look). */
  private readonly crashed = new Set<string>();

  constructor(
    private readonly store: ObjectStore,
    private readonly o: ControllerOptions = {},
  ) {}

  start(intervalMs = 100): void {
    this.stop();
    this.timer = setInterval(() => this.tick(), intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** What an image does changed (a test's behaviour function): the next pass looks at every pod. */
  poke(): void {
    this.again = true;
  }

  /** One pass over every workload (exported for tests that step it). */
  tick(): void {
    // Nothing written since the last pass, and no pod mid-way through a crash: nothing to do.
    if (this.store.resourceVersion === this.seen && !this.again) return;
    this.again = false;
    // What this pass writes is seen by the next one (the kubelet's pod status, then the workload's).
    this.seen = this.store.resourceVersion;
    this.collectGarbage();
    // Pods by owner, listed once a pass (a lookup per workload would make a pass quadratic).
    this.owned.clear();
    for (const p of this.store.list(T("pods"), undefined, q)) this.own(p);
    for (const d of this.store.list(T("deployments", "apps"), undefined, q)) this.syncDeployment(d);
    for (const s of this.store.list(T("statefulsets", "apps"), undefined, q)) this.syncStatefulSet(s);
    for (const p of this.store.list(T("pods"), undefined, q)) this.kubelet(p);
  }

  private own(p: Obj): void {
    for (const r of list(meta(p).ownerReferences)) {
      const uid = String(r.uid);
      this.owned.set(uid, [...(this.owned.get(uid) ?? []), p]);
    }
  }

  private ownedBy(o: Obj): Obj[] {
    return this.owned.get(String(meta(o).uid)) ?? [];
  }

  private exists(t: ResourceType, ns: string, name: string): boolean {
    try {
      this.store.get(t, ns, name);
      return true;
    } catch {
      return false;
    }
  }

  private collectGarbage(): void {
    const uids = new Set<string>();
    for (const t of [T("deployments", "apps"), T("statefulsets", "apps")])
      for (const o of this.store.list(t, undefined, q)) uids.add(String(meta(o).uid));
    for (const t of [T("pods"), T("persistentvolumeclaims")]) {
      for (const o of this.store.list(t, undefined, q)) {
        const owners = list(meta(o).ownerReferences);
        if (owners.length && !owners.some((r) => uids.has(String(r.uid))))
          this.store.delete(t, String(meta(o).namespace), String(meta(o).name), false);
      }
    }
  }

  private createPod(owner: Obj, name: string, labels: Obj, template: Obj): string | undefined {
    const ns = String(meta(owner).namespace);
    const pods = T("pods");
    if (this.exists(pods, ns, name)) return undefined;
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        namespace: ns,
        labels,
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: String(owner.kind),
            name: String(meta(owner).name),
            uid: String(meta(owner).uid),
            controller: true,
          },
        ],
      },
      spec: obj(template.spec),
    };
    try {
      let namespace: Obj | undefined;
      try {
        namespace = this.store.get(T("namespaces"), undefined, ns);
      } catch {
        namespace = undefined;
      }
      admitPod(namespace, pod);
      this.own(this.store.create(pods, ns, pod, MANAGER, false));
      return undefined;
    } catch (err) {
      return err instanceof ApiError ? err.message : String(err);
    }
  }

  private setStatus(t: ResourceType, o: Obj, status: Obj): void {
    const current = obj(o.status);
    if (JSON.stringify(stripTimes(current)) === JSON.stringify(stripTimes(status))) return;
    this.store.update(
      t,
      String(meta(o).namespace),
      String(meta(o).name),
      { merge: { status } },
      MANAGER,
      false,
      true,
    );
  }

  private syncDeployment(d: Obj): void {
    const spec = obj(d.spec);
    const template = obj(spec.template);
    const hash = createHash("sha256").update(JSON.stringify(template)).digest("hex").slice(0, 10);
    const name = String(meta(d).name);
    const ns = String(meta(d).namespace);
    const wanted = typeof spec.replicas === "number" ? spec.replicas : 1;
    const labels = { ...obj(obj(template.metadata).labels), "pod-template-hash": hash };
    let failure: string | undefined;
    for (let i = 0; i < wanted; i++) failure ??= this.createPod(d, `${name}-${hash}-${i}`, labels, template);
    const mine = this.ownedBy(d);
    const current = mine.filter((p) => obj(meta(p).labels)["pod-template-hash"] === hash);
    const ready = (p: Obj) =>
      list(obj(p.status).conditions).some((c) => c.type === "Ready" && c.status === "True");
    const currentReady = current.filter(ready).length;
    // The new pods are all up: the old template's go (a rolling update in one step).
    if (currentReady >= wanted) {
      for (const p of mine)
        if (!current.includes(p)) this.store.delete(T("pods"), ns, String(meta(p).name), false);
      this.owned.set(String(meta(d).uid), current);
    }
    const live = this.ownedBy(d);
    const available = live.filter(ready).length;
    const conditions: Obj[] = [
      {
        type: "Available",
        status: available >= wanted ? "True" : "False",
        reason: available >= wanted ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
        lastUpdateTime: now(),
        lastTransitionTime: now(),
      },
      {
        type: "Progressing",
        status: "True",
        reason: currentReady >= wanted ? "NewReplicaSetAvailable" : "ReplicaSetUpdated",
        lastUpdateTime: now(),
        lastTransitionTime: now(),
      },
    ];
    if (failure)
      conditions.push({
        type: "ReplicaFailure",
        status: "True",
        reason: "FailedCreate",
        message: failure,
        lastUpdateTime: now(),
        lastTransitionTime: now(),
      });
    this.setStatus(T("deployments", "apps"), d, {
      observedGeneration: meta(d).generation,
      replicas: live.length,
      updatedReplicas: current.length,
      readyReplicas: available,
      availableReplicas: available,
      ...(live.length > available ? { unavailableReplicas: live.length - available } : {}),
      conditions,
    });
  }

  private syncStatefulSet(s: Obj): void {
    const spec = obj(s.spec);
    const template = obj(spec.template);
    const name = String(meta(s).name);
    const ns = String(meta(s).namespace);
    const hash = createHash("sha256").update(JSON.stringify(template)).digest("hex").slice(0, 10);
    const wanted = typeof spec.replicas === "number" ? spec.replicas : 1;
    const selector = obj(obj(spec.selector).matchLabels);
    const retention = obj(spec.persistentVolumeClaimRetentionPolicy);
    for (let i = 0; i < wanted; i++) {
      for (const vct of list(spec.volumeClaimTemplates)) {
        const claim = `${String(meta(vct).name)}-${name}-${i}`;
        if (this.exists(T("persistentvolumeclaims"), ns, claim)) continue;
        // The controller owns the claim only when it is to go with the StatefulSet.
        const owners =
          retention.whenDeleted === "Delete"
            ? [
                {
                  apiVersion: "apps/v1",
                  kind: "StatefulSet",
                  name,
                  uid: String(meta(s).uid),
                  controller: true,
                },
              ]
            : [];
        this.store.create(
          T("persistentvolumeclaims"),
          ns,
          {
            apiVersion: "v1",
            kind: "PersistentVolumeClaim",
            metadata: {
              name: claim,
              namespace: ns,
              labels: { ...obj(meta(vct).labels), ...selector },
              ...(owners.length ? { ownerReferences: owners } : {}),
            },
            spec: obj(vct.spec),
          },
          MANAGER,
          false,
        );
      }
      const labels = {
        ...obj(obj(template.metadata).labels),
        "controller-revision-hash": `${name}-${hash}`,
        "statefulset.kubernetes.io/pod-name": `${name}-${i}`,
      };
      const failure = this.createPod(s, `${name}-${i}`, labels, template);
      if (failure) {
        this.setStatus(T("statefulsets", "apps"), s, {
          observedGeneration: meta(s).generation,
          replicas: 0,
          availableReplicas: 0,
          readyReplicas: 0,
          conditions: [{ type: "FailedCreate", status: "True", message: failure }],
        });
        return;
      }
    }
    const pods = this.ownedBy(s);
    const ready = pods.filter((p) =>
      list(obj(p.status).conditions).some((c) => c.type === "Ready" && c.status === "True"),
    ).length;
    this.setStatus(T("statefulsets", "apps"), s, {
      observedGeneration: meta(s).generation,
      replicas: pods.length,
      readyReplicas: ready,
      availableReplicas: ready,
      currentRevision: `${name}-${hash}`,
      updateRevision: `${name}-${hash}`,
    });
  }

  /** The kubelet: a pod's status from what its image does. */
  private kubelet(p: Obj): void {
    const name = String(meta(p).name);
    const containers = list(obj(p.spec).containers);
    const behaviours = containers.map((c) => this.o.behaviour?.(String(c.image)) ?? "ready");
    const crashOnce = behaviours.includes("crash-once") && !this.crashed.has(name);
    const crashing = behaviours.includes("crash") || crashOnce;
    if (behaviours.includes("unschedulable")) {
      this.writePodStatus(p, {
        phase: "Pending",
        conditions: [
          {
            type: "PodScheduled",
            status: "False",
            reason: "Unschedulable",
            message: "0/3 nodes are available: 3 Insufficient cpu.",
          },
        ],
      });
      return;
    }
    if (crashOnce) this.again = true;
    if (crashOnce && obj(p.status).phase === "Running") this.crashed.add(name);
    const statuses = containers.map((c, i) => {
      const bad = behaviours[i] === "crash" || (behaviours[i] === "crash-once" && crashOnce);
      return {
        name: String(c.name),
        image: String(c.image),
        imageID: "",
        ready: !bad,
        started: !bad,
        restartCount: bad ? 3 : behaviours[i] === "crash-once" ? 1 : 0,
        state: bad
          ? {
              waiting: {
                reason: "CrashLoopBackOff",
                message: `back-off 40s restarting failed container=${String(c.name)}`,
              },
            }
          : { running: { startedAt: now() } },
      };
    });
    const ready = crashing ? "False" : "True";
    const status = {
      phase: "Running",
      conditions: [
        { type: "PodScheduled", status: "True" },
        { type: "Ready", status: ready },
        { type: "ContainersReady", status: ready },
      ],
      containerStatuses: statuses,
    };
    this.writePodStatus(p, status);
  }

  private writePodStatus(p: Obj, status: Obj): void {
    const cur = obj(p.status);
    if (JSON.stringify(stripTimes(cur)) === JSON.stringify(stripTimes(status))) return;
    // A replace, not a merge: a pod going from Running to Pending keeps no container statuses.
    this.store.update(
      T("pods"),
      String(meta(p).namespace),
      String(meta(p).name),
      { merge: { status: { ...Object.fromEntries(Object.keys(cur).map((k) => [k, null])), ...status } } },
      "kubelet",
      false,
      true,
    );
  }
}

/** A status without its timestamps, to tell a real change from a rewrite. */
function stripTimes(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v ?? {}, (k, val) => (/Time$|startedAt/.test(k) ? undefined : val)));
}
