// What the listener has told the control plane, so it posts only what changed: each revision's
// rollout state, and each deployment's pods (held back a while when they do not serve for no
// reason a pod shows). Posts in requests well under the server's body limit.
import type { DeploymentPodsReport, RevisionReport } from "../protocol/listener.ts";
import type { ControlPlane } from "./control-plane.ts";

/** Pods reported per deployment at most (the protocol's limit). */
const MAX_PODS = 1000;
/** How long not serving without a reason is held back before it is reported. */
export const SETTLE_MS = 10_000;
/** Pods reports per status request at most this many bytes (the server takes 1 MiB by default). */
const BATCH_BYTES = 256 * 1024;

const signature = (r: RevisionReport) => `${r.state}\0${r.reason ?? ""}`;

export class Reporter {
  /** Last state sent per revision. */
  private readonly revisions = new Map<string, string>();
  /** Last pods report sent per deployment (its JSON). */
  private readonly pods = new Map<string, string>();
  /** Since when a deployment has not served for no reason a pod shows (a pod replaced, starting). */
  private readonly unexplainedSince = new Map<string, number>();

  constructor(
    private readonly cp: ControlPlane,
    /** Called after each request the control plane answered. */
    private readonly heard: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether anything was sent about the revision yet. */
  has(revisionId: string): boolean {
    return this.revisions.has(revisionId);
  }

  /** Its rollout was reported finished: it stays so (later pod failures are the pods report's). */
  finished(revisionId: string): boolean {
    return this.revisions.get(revisionId)?.startsWith("available\0") ?? false;
  }

  revisionChanged(r: RevisionReport): boolean {
    return this.revisions.get(r.revision_id) !== signature(r);
  }

  /**
   * Whether the pods report is to be sent: it differs from the last one, and is not a "not
   * serving" with no pod saying why that began less than SETTLE_MS ago (a pod with a reason,
   * serving again, or the time passing — a resync looks again — sends it). So a
   * deployment.unhealthy names a real reason, not the moment between a pod and its replacement.
   */
  podsChanged(report: DeploymentPodsReport): boolean {
    report.pods = report.pods.slice(0, MAX_PODS);
    const id = report.deployment_id;
    const explained = report.pods.some(
      (p) => p.revision_id === report.revision_id && p.component === "api" && p.reason,
    );
    if (report.serving || explained) this.unexplainedSince.delete(id);
    else {
      const since = this.unexplainedSince.get(id) ?? this.now();
      this.unexplainedSince.set(id, since);
      if (this.now() - since < SETTLE_MS) return false;
    }
    return this.pods.get(id) !== JSON.stringify(report);
  }

  /** Forgets revisions and deployments no longer desired. */
  keepOnly(revisionIds: Set<string>, deploymentIds: Set<string>): void {
    for (const id of this.revisions.keys()) if (!revisionIds.has(id)) this.revisions.delete(id);
    for (const map of [this.pods, this.unexplainedSince])
      for (const id of map.keys()) if (!deploymentIds.has(id)) map.delete(id);
  }

  async send(reports: RevisionReport[], pods: DeploymentPodsReport[] = []): Promise<void> {
    const batches: DeploymentPodsReport[][] = [];
    let batch: DeploymentPodsReport[] = [];
    let size = 0;
    for (const p of pods) {
      const bytes = JSON.stringify(p).length;
      if (batch.length && (size + bytes > BATCH_BYTES || batch.length >= 1000)) {
        batches.push(batch);
        batch = [];
        size = 0;
      }
      batch.push(p);
      size += bytes;
    }
    if (batch.length) batches.push(batch);
    for (let i = 0; i < Math.max(1, batches.length); i++) {
      const revisions = i === 0 ? reports : [];
      const deployments = batches[i] ?? [];
      await this.cp.report(revisions, deployments.length ? deployments : undefined);
      this.heard();
      for (const r of revisions) this.revisions.set(r.revision_id, signature(r));
      for (const p of deployments) this.pods.set(p.deployment_id, JSON.stringify(p));
    }
  }
}
