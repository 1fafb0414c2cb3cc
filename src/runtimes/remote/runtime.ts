import type { RevisionState } from "../../protocol/listener.ts";
import {
  type Activation,
  DeployError,
  type PhaseContext,
  type PreparedSource,
  type ProcessInfo,
  type RevisionSpec,
  type Runtime,
  SourceError,
} from "../interface.ts";
import { splitImageRef } from "./image-ref.ts";

/**
 * The `remote` runtime: revisions run by a listener on a Kubernetes cluster. Nothing runs here.
 * Activating a revision publishes it in the listener's desired state and waits for the listener's
 * report on it: `available` is deployed, `failed` a DeployError with the listener's reason (the
 * previous revision is desired again, so it keeps serving). Sources that are not images are built
 * and pushed by an ImageBuilder first. The reconciler hands it a RemoteBridge (its database side).
 */

/** A listener's last report on a revision (POST /v2/listeners/{id}/status). */
export interface RemoteReport {
  state: RevisionState;
  reason: string | null;
}

export interface RemoteBridge {
  /** What a listener should run may have changed (a deployment's id, or undefined for all). */
  publish(deploymentId?: string): Promise<void>;
  /** The listener's last report on the revision, if any. */
  report(revisionId: string): Promise<RemoteReport | undefined>;
  /** Resolves when the revision is reported on, after `ms`, or when `signal` aborts. */
  nextReport(revisionId: string, ms: number, signal: AbortSignal): Promise<void>;
  /** Where a deployment is served (its routing host as a URL). */
  url(deploymentName: string): string;
  /** Records the image a revision was built into and its health path (its desired state names both). */
  recordImage(revisionId: string, image: BuiltImage): Promise<void>;
  /** The image recorded for the revision before, if any (a restart does not build again). */
  imageOf(revisionId: string): Promise<string | undefined>;
}

/** An image built and pushed for a revision. */
export interface BuiltImage {
  ref: string;
  /** The app config's `healthcheck`: what the cluster's probes ask. */
  healthPath: string;
}

/** Builds a revision's source into an image and pushes it. */
export interface ImageBuilder {
  /** Fetches the source (a git source reports the commit it checked out). */
  prepare(spec: RevisionSpec, ctx: PhaseContext): Promise<PreparedSource>;
  /** Builds and pushes; returns what was pushed. Throws BuildError. */
  build(spec: RevisionSpec, ctx: PhaseContext): Promise<BuiltImage>;
  discard(deploymentId: string, revisionId: string): Promise<void>;
}

/** Re-read the report at least this often, in case a notification was missed. */
const RECHECK_MS = 2000;

export class RemoteRuntime implements Runtime {
  readonly name = "remote";
  readonly remote = true;

  constructor(
    private readonly bridge: RemoteBridge,
    private readonly builder?: ImageBuilder,
  ) {}

  async prepare(spec: RevisionSpec, ctx: PhaseContext): Promise<PreparedSource> {
    if (spec.source.kind === "image") {
      ctx.log("build", `Slipway: ${spec.source.imageUri} will be pulled by the cluster.`);
      return {};
    }
    if (!this.builder) {
      throw new SourceError(
        "this source must be built into an image for the listener, and this server has no registry to push it to (SLIPWAY_REGISTRY_URL)",
      );
    }
    return this.builder.prepare(spec, ctx);
  }

  async build(spec: RevisionSpec, ctx: PhaseContext): Promise<void> {
    if (spec.source.kind === "image" || !this.builder) return;
    const image = await this.builder.build(spec, ctx);
    await this.bridge.recordImage(spec.revisionId, image);
    ctx.log("build", `Slipway: pushed ${image.ref}.`);
  }

  async activate(spec: RevisionSpec, ctx: PhaseContext): Promise<Activation> {
    await this.bridge.publish(spec.deploymentId);
    ctx.log("deploy", "Slipway: handed to the listener; waiting for its rollout.");
    let seen: string | undefined;
    for (;;) {
      if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error("aborted");
      const report = await this.bridge.report(spec.revisionId);
      if (report && report.state !== seen) {
        seen = report.state;
        ctx.log("deploy", `Listener: ${report.state}${report.reason ? ` (${report.reason})` : ""}.`);
      }
      if (report?.state === "available") {
        const url = this.bridge.url(spec.deploymentName);
        if (spec.source.kind !== "image") return { url };
        return { url, imageVersion: splitImageRef(spec.source.imageUri).tag ?? null };
      }
      if (report?.state === "failed") throw new DeployError(report.reason ?? "the rollout failed");
      await this.bridge.nextReport(spec.revisionId, RECHECK_MS, ctx.signal);
    }
  }

  async isBuilt(spec: RevisionSpec): Promise<boolean> {
    if (spec.source.kind === "image" || !this.builder) return true;
    return (await this.bridge.imageOf(spec.revisionId)) !== undefined;
  }

  /** Its pods run on the listener's cluster; this server sees none of them. */
  async processes(_deploymentId: string): Promise<ProcessInfo[]> {
    return [];
  }

  async teardown(_deploymentId: string): Promise<void> {
    // The row is going: every listener re-reads its desired state (the deployment drops out).
    await this.bridge.publish();
  }

  async discard(deploymentId: string, revisionId: string): Promise<void> {
    await this.builder?.discard(deploymentId, revisionId);
    // A failed or interrupted rollout drops out of the desired state: the listener goes back.
    await this.bridge.publish(deploymentId);
  }

  /** Listeners' liveness decides remote deployments' health (reconciler/leader.ts), not this process. */
  health(_deploymentId: string): "running" | "stopped" | "unknown" {
    return "running";
  }

  async close(): Promise<void> {}
}
