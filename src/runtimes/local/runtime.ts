import { mkdir, rm } from "node:fs/promises";
import {
  type Activation,
  DeployError,
  type PhaseContext,
  type PreparedSource,
  type RevisionSpec,
  type Runtime,
} from "../interface.ts";
import { type BuildRecord, readBuildRecord } from "./app-config.ts";
import { Confiner } from "./confine.ts";
import { removeDeploymentContainers } from "./container.ts";
import { EngineFinder } from "./containers/engine.ts";
import { abortError } from "./exec.ts";
import { RevisionGroup } from "./group.ts";
import { planLaunch } from "./launch-plan.ts";
import { Layout } from "./layout.ts";
import { DEFAULT_LIMITS, type LocalLimits } from "./limits.ts";
import type { LocalRuntimeOptions } from "./options.ts";
import { ProcessRecord } from "./orphans.ts";
import { buildRevision, isRevisionBuilt, type PhaseHandles, prepareRevision, revisionLog } from "./phases.ts";
import { Replica } from "./replica.ts";
import { AppsRouter } from "./router.ts";
import { DeploymentSlot } from "./slot.ts";
import { recordRestart } from "./traffic.ts";

export type { LocalRuntimeOptions, RuntimeLogger } from "./options.ts";

/**
 * The `local` data plane: builds revisions in directories under the data dir, runs them as
 * process groups on this machine, and serves them through one apps listener by Host name.
 * Memory limits: see README.md in this folder.
 */
export class LocalRuntime implements Runtime {
  readonly name = "local";
  private readonly layout: Layout;
  private readonly router: AppsRouter;
  private readonly deployments = new Map<string, DeploymentSlot>();
  private boundPort: number | undefined;
  private closed = false;
  private readonly stopGraceMs: number;
  private readonly drainTimeoutMs: number;
  private readonly restartBackoffMs: number;
  private readonly maxScale: number;
  private readonly limits: LocalLimits;
  /** The container engine of image revisions, found on first use. */
  readonly containers: EngineFinder;
  /** The sandbox: every build command and app process goes through it. */
  readonly confiner: Confiner;
  /** What prepare and build work with (phases.ts). */
  private readonly phases: PhaseHandles;
  private warned = false;

  constructor(private readonly o: LocalRuntimeOptions) {
    this.layout = new Layout(o.dataDir);
    this.confiner = new Confiner(this.layout, o.sandbox, o.uidRange ?? { first: 200_000, last: 265_535 });
    this.router = new AppsRouter(o.appsDomain);
    this.stopGraceMs = o.stopGraceMs ?? 5000;
    this.drainTimeoutMs = o.drainTimeoutMs ?? 30_000;
    this.restartBackoffMs = o.restartBackoffMs ?? 1000;
    this.maxScale = o.maxScale ?? 8;
    this.limits = { ...DEFAULT_LIMITS, ...o.limits };
    this.containers = new EngineFinder(o.dataDir, o.containerEngine);
    this.phases = {
      layout: this.layout,
      confiner: this.confiner,
      containers: this.containers,
      limits: this.limits,
    };
  }

  /**
   * Decides the sandbox (once; SLIPWAY_SANDBOX=bwrap without a working bwrap throws) and opens the
   * apps listener (idempotent); resolves to the bound port.
   */
  async start(): Promise<number> {
    const { system, reason } = await this.confiner.choose();
    if (system === undefined && !this.warned) {
      this.warned = true;
      this.o.logger.warn(
        { sandbox: this.o.sandbox, reason },
        "no sandbox: apps run unsandboxed, as Slipway's own user; only the first organization may deploy (README: Sandbox)",
      );
    }
    this.boundPort = await this.router.listen(this.o.appsPort, this.o.appsHost);
    return this.boundPort;
  }

  /** The apps listener's port (the bound one when `appsPort` was 0). */
  get appsPort(): number {
    return this.boundPort ?? this.o.appsPort;
  }

  urlFor(deploymentName: string): string {
    return `http://${deploymentName}.${this.o.appsDomain}:${this.appsPort}`;
  }

  prepare(spec: RevisionSpec, ctx: PhaseContext): Promise<PreparedSource> {
    return prepareRevision(this.phases, spec, ctx);
  }

  build(spec: RevisionSpec, ctx: PhaseContext): Promise<void> {
    return buildRevision(this.phases, spec, ctx);
  }

  isBuilt(spec: RevisionSpec): Promise<boolean> {
    return isRevisionBuilt(this.phases, spec);
  }

  async activate(spec: RevisionSpec, ctx: PhaseContext): Promise<Activation> {
    if (this.closed) throw new Error("the local runtime is closed");
    await this.start();
    const state = this.slotFor(spec.deploymentId, spec.deploymentName);
    return state.serialize(() => this.activateNow(state, spec, ctx));
  }

  private async activateNow(
    state: DeploymentSlot,
    spec: RevisionSpec,
    ctx: PhaseContext,
  ): Promise<Activation> {
    const log = revisionLog(this.confiner, spec, ctx, "deploy");
    const fail: (message: string) => never = (message) => {
      log(`error: ${message}`);
      throw new DeployError(message);
    };
    if (ctx.signal.aborted) throw abortError(ctx.signal);
    if (this.closed) throw new Error("the local runtime is closed");
    const refusal = await this.confiner.refusal(spec);
    if (refusal !== undefined) fail(refusal);
    const url = this.urlFor(spec.deploymentName);

    if (!state.reaped) {
      state.reaped = true;
      const file = this.layout.processRecord(spec.deploymentId);
      const reaped = await ProcessRecord.reap(file, this.stopGraceMs);
      if (reaped > 0)
        this.o.logger.info({ deploymentId: spec.deploymentId, reaped }, "ended leftover app processes");
      if (spec.source.kind === "image") await this.removeLeftoverContainers(spec.deploymentId);
    }
    for (const other of this.deployments.values()) {
      if (other !== state && other.name === spec.deploymentName && other.active !== undefined) {
        fail(`the name "${spec.deploymentName}" is already served by another deployment on this machine`);
      }
    }

    state.rename(spec.deploymentName);

    if (state.active?.revisionId === spec.revisionId && state.active.allReady) {
      log(`slipway: revision ${spec.revisionId} is already serving at ${url}`);
      return this.activation(url, spec);
    }

    const record = await readBuildRecord(this.layout.buildRecord(spec.deploymentId, spec.revisionId));
    if (record === undefined) fail(`revision ${spec.revisionId} has no build output; build it first`);
    const built: BuildRecord = record;

    const { scale, env, launch } = await planLaunch({
      spec,
      built,
      layout: this.layout,
      confiner: this.confiner,
      containers: this.containers,
      network: this.o.containerNetwork ?? "bridge",
      maxScale: this.maxScale,
      stopGraceMs: this.stopGraceMs,
      log,
      fail,
    });

    await mkdir(this.layout.deploymentDir(spec.deploymentId), { recursive: true });
    const replicas: Replica[] = [];
    for (let i = 1; i <= scale; i++) {
      replicas.push(
        new Replica({
          label: `web.${i}`,
          launch: launch(i),
          env,
          healthPath: built.healthcheck,
          healthTimeoutMs: this.o.healthTimeoutMs,
          stopGraceMs: this.stopGraceMs,
          restartBackoffMs: this.restartBackoffMs,
          log,
          record: state.record,
          onRestart: () => recordRestart(spec.deploymentName),
        }),
      );
    }
    const group = new RevisionGroup(spec.revisionId, replicas, log);
    state.starting.add(group);
    try {
      await group.start(ctx.signal);
    } catch (err) {
      if (ctx.signal.aborted) {
        log("slipway: interrupted; the new processes were stopped");
        throw abortError(ctx.signal);
      }
      if (this.closed || !state.starting.has(group))
        throw new Error("the deployment was stopped while starting");
      fail(err instanceof Error ? err.message : String(err));
    } finally {
      state.starting.delete(group);
    }
    if (ctx.signal.aborted || this.closed) {
      await group.stop();
      if (ctx.signal.aborted) throw abortError(ctx.signal);
      throw new Error("the local runtime is closed");
    }

    const previous = state.switchTo(group);
    // No pids: tenants see their own (sandboxed) numbering, never the host's.
    log(`slipway: revision ${spec.revisionId} is serving at ${url}`);
    if (previous !== undefined && previous !== group) await state.drain(previous, this.drainTimeoutMs, log);
    return this.activation(url, spec);
  }

  /** What an activation reports: the URL, and the image_version of an image revision. */
  private async activation(url: string, spec: RevisionSpec): Promise<Activation> {
    if (spec.source.kind !== "image") return { url };
    const record = await readBuildRecord(this.layout.buildRecord(spec.deploymentId, spec.revisionId));
    return record?.kind === "image" ? { url, imageVersion: record.imageVersion ?? null } : { url };
  }

  async teardown(deploymentId: string): Promise<void> {
    const state = this.deployments.get(deploymentId);
    if (state !== undefined) {
      await state.stopPending();
      await state.serialize(() => state.stopActive());
      this.deployments.delete(deploymentId);
    }
    const dir = this.layout.deploymentDir(deploymentId);
    await ProcessRecord.reap(this.layout.processRecord(deploymentId), this.stopGraceMs);
    const engine = await this.containers.usable();
    if (engine !== undefined) await removeDeploymentContainers(engine, this.containers.owner, deploymentId);
    await this.confiner.release(deploymentId);
    await rm(dir, { recursive: true, force: true });
  }

  async discard(deploymentId: string, revisionId: string): Promise<void> {
    const state = this.deployments.get(deploymentId);
    if (state?.active?.revisionId === revisionId) {
      // Its files are what a restart activates from; removing them would be the bug, not skipping.
      this.o.logger.warn({ deploymentId, revisionId }, "not discarding the revision that is serving");
      return;
    }
    await rm(this.layout.revisionDir(deploymentId, revisionId), { recursive: true, force: true });
  }

  health(deploymentId: string): "running" | "stopped" | "unknown" {
    const active = this.deployments.get(deploymentId)?.active;
    if (active === undefined) return "stopped";
    return active.serving ? "running" : "unknown";
  }

  async close(): Promise<void> {
    this.closed = true;
    const slots = [...this.deployments.values()];
    await Promise.all(slots.flatMap((s) => [s.stopPending(), s.active?.stop()]));
    // Activations in progress see `closed` and stop what they started; wait for them to settle.
    await Promise.all(slots.map((s) => s.settled()));
    this.deployments.clear();
    await this.router.close();
  }

  /** Containers a killed Slipway left running for this deployment (their CLI was reaped above). */
  private async removeLeftoverContainers(deploymentId: string): Promise<void> {
    const engine = await this.containers.usable();
    if (engine === undefined) return;
    const removed = await removeDeploymentContainers(engine, this.containers.owner, deploymentId);
    if (removed > 0) this.o.logger.info({ deploymentId, removed }, "removed leftover app containers");
  }

  /** The deployment's slot, made on first use (named `name` until an activation renames it). */
  private slotFor(deploymentId: string, name: string): DeploymentSlot {
    let slot = this.deployments.get(deploymentId);
    if (slot === undefined) {
      const record = new ProcessRecord(this.layout.processRecord(deploymentId));
      slot = new DeploymentSlot(deploymentId, name, record, this.router);
      this.deployments.set(deploymentId, slot);
    }
    return slot;
  }
}
