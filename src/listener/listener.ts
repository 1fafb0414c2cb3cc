// Why over 300 lines: the listener's one loop (poll desired state, apply, judge rollouts and pods,
// prune) whose steps share its caches; what is reported is reporter.ts's, pruning is next to go.
import type { Server } from "node:http";
import { KubeConfig } from "@kubernetes/client-node";
import {
  type DeploymentPodsReport,
  type DesiredDeployment,
  type DesiredState,
  hostOf,
  type RevisionReport,
} from "../protocol/listener.ts";
import { Applier, objectKey } from "./applier.ts";
import { CALL_TIMEOUT_MS, Cluster, ClusterError } from "./cluster.ts";
import { ControlPlane, type ControlPlaneOptions } from "./control-plane.ts";
import { startHealthServer } from "./health.ts";
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_REVISION } from "./manifests/common.ts";
import { manifestsFor, names, partsOf } from "./manifests/index.ts";
import type { K8sObject, ManifestOptions } from "./manifests/types.ts";
import { PasswordKeeper } from "./passwords.ts";
import { podsReport } from "./pods.ts";
import { prune } from "./prune.ts";
import { Reporter } from "./reporter.ts";
import { revisionState } from "./rollout.ts";
import { Watches } from "./watches.ts";

export interface ListenerOptions {
  controlPlane: ControlPlaneOptions;
  /** Path of a kubeconfig; without it, in-cluster config or KUBECONFIG / ~/.kube/config. */
  kubeconfig?: string;
  manifests: Omit<ManifestOptions, "listenerId">;
  /** Host `<name>.<domain>` for every deployment, instead of the control plane's apps domain. */
  domain?: string;
  /** Port of the liveness (/healthz) and readiness (/readyz) answers; none: no health server. */
  healthPort?: number;
  /** Namespaces to prune in even when no desired deployment names them. */
  namespaces: string[];
  waitSeconds: number;
  resyncMs: number;
  heartbeatMs: number;
  log: (line: string) => void;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });

export class Listener {
  private readonly cp: ControlPlane;
  private readonly cluster: Cluster;
  private readonly applier: Applier;
  /** When the loop last went round (the liveness answer reads it). */
  private lastLoop = Date.now();
  /** Namespaces the last prune could not look at, with why. */
  private pruneFailures: { namespace: string; reason: string }[] = [];
  /** The app workloads' names of each desired revision. */
  private readonly workloadsOf = new Map<string, string[]>();
  /** A Deployment went away under the listener: the next resync applies the desired state again. */
  private drift = false;
  /** What the last prune that reached every namespace kept (namespaces and object keys). */
  private prunedFor: string | undefined;
  private readonly abort = new AbortController();
  private version = 0;
  private desired: DesiredDeployment[] = [];
  private readonly namespaces: Set<string>;
  /** What was posted, so only changes are. */
  private readonly reporter: Reporter;
  /** The server takes pods in status reports (its desired state says `pod_reports`). */
  private podReports = false;
  private readonly failedApply = new Map<string, string>();
  private readonly watches: Watches;
  private readonly passwords: PasswordKeeper;
  private lastContact = 0;
  private reconcileNeeded = false;
  private evaluating: Promise<void> | undefined;
  private evaluateAgain = false;
  private timers: NodeJS.Timeout[] = [];
  private health: Server | undefined;

  constructor(private readonly o: ListenerOptions) {
    this.cp = new ControlPlane(o.controlPlane);
    const kc = new KubeConfig();
    if (o.kubeconfig) kc.loadFromFile(o.kubeconfig);
    else kc.loadFromDefault();
    this.cluster = new Cluster(kc);
    this.applier = new Applier(this.cluster);
    this.reporter = new Reporter(this.cp, () => {
      this.lastContact = Date.now();
    });
    this.passwords = new PasswordKeeper(this.cluster);
    this.watches = new Watches(
      this.cluster,
      o.controlPlane.listenerId,
      () => void this.evaluate(),
      o.log,
      (namespace, name) => {
        // Applied objects are skipped while unchanged: one deleted by hand is applied again.
        this.applier.forget(
          objectKey({ apiVersion: "apps/v1", kind: "Deployment", metadata: { namespace, name } }),
        );
        this.drift = true;
      },
    );
    this.namespaces = new Set(o.namespaces);
  }

  /** Runs until stop(): the long-poll loop, with resync and heartbeat timers beside it. */
  async run(): Promise<void> {
    if (this.o.healthPort !== undefined) {
      // Live while the loop goes round (a poll lasts the wait, a cluster call at most its timeout).
      const stuckAfter = this.o.waitSeconds * 1000 + 4 * CALL_TIMEOUT_MS + 30_000;
      const contactWithin = Math.max(3 * this.o.heartbeatMs, this.o.waitSeconds * 1000 + 30_000);
      this.health = await startHealthServer(this.o.healthPort, {
        live: () => Date.now() - this.lastLoop < stuckAfter,
        ready: () => {
          const since = Date.now() - this.lastContact;
          if (since > contactWithin) return { ok: false, detail: "no answer from the control plane" };
          const failed = this.pruneFailures.map((f) => `${f.namespace}: ${f.reason}`);
          return { ok: true, detail: failed.length ? `ready; not pruned: ${failed.join("; ")}` : "ready" };
        },
      });
      this.o.log(`listener: health on :${this.o.healthPort} (/healthz, /readyz)`);
    }
    this.timers.push(setInterval(() => this.resync(), this.o.resyncMs));
    this.timers.push(setInterval(() => this.heartbeat(), Math.max(1000, Math.floor(this.o.heartbeatMs / 3))));
    let first = true;
    let backoff = 1000;
    while (!this.abort.signal.aborted) {
      try {
        const state = await this.cp.desired(
          first ? 0 : this.version,
          first ? 0 : this.o.waitSeconds,
          this.abort.signal,
        );
        this.lastContact = Date.now();
        this.lastLoop = Date.now();
        backoff = 1000;
        if (first || state.version !== this.version || this.reconcileNeeded) await this.reconcile(state);
        first = false;
        if (this.reconcileNeeded) {
          // The cluster did not take the objects: the next poll answers at once, so wait first.
          await sleep(backoff, this.abort.signal);
          backoff = Math.min(backoff * 2, 30_000);
        }
      } catch (err) {
        if (this.abort.signal.aborted) break;
        this.lastLoop = Date.now();
        this.o.log(
          `listener: ${err instanceof Error ? err.message : String(err)}; retrying in ${backoff / 1000}s`,
        );
        await sleep(backoff, this.abort.signal);
        backoff = Math.min(backoff * 2, 30_000);
      }
    }
  }

  stop(): void {
    this.abort.abort();
    this.health?.close();
    for (const t of this.timers) clearInterval(t);
    this.watches.stop();
  }

  private async reconcile(state: DesiredState): Promise<void> {
    this.reconcileNeeded = false;
    this.podReports = state.pod_reports === true;
    for (const ns of state.namespaces) this.namespaces.add(ns);
    const domain = this.o.domain;
    const deployments = state.deployments.map((d) =>
      domain ? { ...d, host: hostOf({ appsDomain: domain }, d.name) } : d,
    );
    const keep = new Map<string, K8sObject>();
    const options: ManifestOptions = { ...this.o.manifests, listenerId: this.o.controlPlane.listenerId };
    for (const d of deployments) {
      this.namespaces.add(d.namespace);
      try {
        const objects = manifestsFor(d, options, await this.passwords.for(d));
        for (const o of objects) keep.set(objectKey(o), o);
        await this.applier.apply(objects);
        this.failedApply.delete(d.revision_id);
        if (!this.reporter.has(d.revision_id))
          await this.reporter.send([{ revision_id: d.revision_id, state: "applied" }]);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        this.o.log(`listener: ${d.name} (${d.deployment_id}) revision ${d.revision_id}: ${message}`);
        if (err instanceof ClusterError && err.permanent) {
          this.failedApply.set(d.revision_id, `refused by the cluster: ${message}`);
        } else {
          // Unreachable or overloaded API server: nothing is pruned, the next resync tries again.
          this.reconcileNeeded = true;
          return;
        }
      }
    }
    this.version = state.version;
    this.desired = deployments;
    // The same objects wanted in the same namespaces as at the last clean prune: nothing to prune.
    const wanted = `${[...this.namespaces].sort().join(",")}\0${[...keep.keys()].sort().join(",")}`;
    if (wanted !== this.prunedFor) {
      const pruned = await prune(this.cluster, this.namespaces, options.listenerId, keep, this.o.log);
      for (const key of pruned.deleted) this.applier.forget(key);
      this.pruneFailures = pruned.failed;
      this.prunedFor = pruned.failed.length === 0 ? wanted : undefined;
    }
    for (const ns of this.namespaces) this.watches.ensure(ns);
    const live = new Set(deployments.map((d) => d.revision_id));
    this.reporter.keepOnly(live, new Set(deployments.map((d) => d.deployment_id)));
    for (const id of this.workloadsOf.keys()) if (!live.has(id)) this.workloadsOf.delete(id);
    await this.evaluate();
  }

  /** Judges every desired revision from its Deployments and pods; posts what changed. */
  private evaluate(): Promise<void> {
    if (this.evaluating) {
      this.evaluateAgain = true;
      return this.evaluating;
    }
    this.evaluating = (async () => {
      do {
        this.evaluateAgain = false;
        try {
          await this.evaluateOnce();
        } catch (err) {
          this.o.log(`listener: status: ${err instanceof Error ? err.message : String(err)}`);
        }
      } while (this.evaluateAgain && !this.abort.signal.aborted);
    })().finally(() => {
      this.evaluating = undefined;
    });
    return this.evaluating;
  }

  private async evaluateOnce(): Promise<void> {
    const changes: RevisionReport[] = [];
    const podChanges: DeploymentPodsReport[] = [];
    for (const d of this.desired) {
      const refused = this.failedApply.get(d.revision_id);
      const n = names(d);
      let report: RevisionReport;
      const deployments: Record<string, unknown>[] = [];
      if (refused) {
        report = { revision_id: d.revision_id, state: "failed", reason: refused };
      } else {
        // Resolving a spec is the costliest step of a pass: once per revision.
        let workloads = this.workloadsOf.get(d.revision_id);
        if (!workloads) {
          workloads = [n.base, ...(partsOf(d).queue ? [n.queue] : [])];
          this.workloadsOf.set(d.revision_id, workloads);
        }
        for (const name of workloads) {
          const cached = this.watches.deployment(d.namespace, name);
          const obj =
            cached === null ? await this.cluster.read("apps/v1", "Deployment", d.namespace, name) : cached;
          // A Deployment still on another revision's template has not taken this one yet.
          if (
            obj &&
            (obj.metadata as { labels?: Record<string, string> } | undefined)?.labels?.[LABEL_REVISION] ===
              d.revision_id
          ) {
            deployments.push(obj);
          }
        }
        // The app's own pods only: a database or cache pod never fails an app revision.
        const pods =
          this.watches.revisionPods(d.namespace, n.base, d.revision_id) ??
          (await this.cluster.pods(
            d.namespace,
            `${LABEL_INSTANCE}=${n.base},${LABEL_REVISION}=${d.revision_id},${LABEL_COMPONENT} in (api,queue)`,
          ));
        report =
          deployments.length === workloads.length
            ? revisionState(d.revision_id, deployments, pods)
            : { revision_id: d.revision_id, state: "applied" };
        // A finished rollout stays finished: pods failing later are the pods report's business
        // (deployment.unhealthy), not a failed rollout of the revision that serves.
        if (this.reporter.finished(d.revision_id))
          report = { revision_id: d.revision_id, state: "available" };
      }
      if (this.reporter.revisionChanged(report)) changes.push(report);
      // Pods only from the watch cache (no list per deployment); until it has listed, a later pass.
      const all = this.podReports ? this.watches.instancePods(d.namespace, n.base) : null;
      if (all) {
        const pods = podsReport({
          deploymentId: d.deployment_id,
          revisionId: d.revision_id,
          pods: all,
          workloads: deployments,
        });
        if (this.reporter.podsChanged(pods)) podChanges.push(pods);
      }
    }
    if (changes.length || podChanges.length) await this.reporter.send(changes, podChanges);
  }

  private resync(): void {
    if (this.reconcileNeeded || this.drift) {
      this.drift = false;
      this.cp
        .desired(0, 0, this.abort.signal)
        .then((s) => this.reconcile(s))
        .catch((err: unknown) =>
          this.o.log(`listener: resync: ${err instanceof Error ? err.message : String(err)}`),
        );
      return;
    }
    void this.evaluate();
  }

  private heartbeat(): void {
    if (Date.now() - this.lastContact < this.o.heartbeatMs) return;
    this.cp.report([]).then(
      () => {
        this.lastContact = Date.now();
      },
      (err: unknown) =>
        this.o.log(`listener: heartbeat: ${err instanceof Error ? err.message : String(err)}`),
    );
  }
}
