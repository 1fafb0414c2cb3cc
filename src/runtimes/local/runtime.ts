// Why over 300 lines: the Runtime contract plus activation, whose steps read best in one place.
import { mkdir, rm } from "node:fs/promises";
import { type BuildRecord, readBuildRecord } from "../build/app-config.ts";
import { removeBuiltImage, removeDeploymentImages } from "../build/build-stores.ts";
import { DEFAULT_LIMITS, type LocalLimits } from "../build/limits.ts";
import { EngineFinder } from "../engine/finder.ts";
import {
  type Activation,
  DeployError,
  type PhaseContext,
  type PreparedSource,
  type ProcessInfo,
  type RevisionSpec,
  type Runtime,
} from "../interface.ts";
import { abortError } from "../shared/exec.ts";
import { Layout } from "../shared/layout.ts";
import { Tail } from "../shared/lines.ts";
import { removeDeploymentContainers } from "./containers/container.ts";
import { containerIsolationCheck } from "./containers/container-isolation.ts";
import { planLaunch } from "./launch-plan.ts";
import { DEFAULT_SCALING, type LocalRuntimeOptions, type ScalingOptions } from "./options.ts";
import { buildRevision, isRevisionBuilt, type PhaseHandles, prepareRevision, revisionLog } from "./phases.ts";
import { watchBuildGroups } from "./processes/build-groups.ts";
import { RevisionGroup } from "./processes/group.ts";
import { ProcessRecord } from "./processes/orphans.ts";
import { Replica } from "./processes/replica.ts";
import { ensureCache } from "./redis/cache.ts";
import { openEdge } from "./routing/edge.ts";
import type { HaproxyFront } from "./routing/haproxy/front.ts";
import { recordRestart } from "./routing/request-metrics.ts";
import { AppsRouter } from "./routing/router.ts";
import { DeploymentSlot } from "./routing/slot.ts";
import { staticGroup } from "./routing/static-group.ts";
import { attachTls, type TlsEdge } from "./routing/tls.ts";
import { announceConfinement } from "./sandbox/announce.ts";
import { Confiner, OTHER_PROTECTION_PROBES } from "./sandbox/confine.ts";
import type { Traffic } from "./scaling/traffic.ts";

export type { LocalRuntimeOptions, RuntimeLogger } from "./options.ts";

/** How many of the app's last output lines end the deploy log of a failed activation. */
const FAILURE_TAIL_LINES = 30;

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
  /** The HTTPS listener (o.tls) and its bound port. */
  private readonly tls: TlsEdge | undefined;
  private tlsBound: number | undefined;
  /** The apps port, opened once (routing/edge.ts); the HAProxy front when it serves that port. */
  private edge: Promise<number> | undefined;
  private front: HaproxyFront | undefined;
  private closed = false;
  private readonly stopGraceMs: number;
  private readonly drainTimeoutMs: number;
  private readonly restartBackoffMs: number;
  private readonly maxScale: number;
  private readonly healthTimeoutMaxMs: number;
  private readonly scaling: Required<ScalingOptions>;
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
    this.containers = new EngineFinder(o.dataDir, o.containerEngine);
    // Image revisions' protection needs this runtime's engine and network; tests may replace all.
    const otherProbes = [
      ...OTHER_PROTECTION_PROBES,
      containerIsolationCheck(this.containers, o.containerNetwork ?? "bridge"),
    ];
    this.confiner = new Confiner(
      this.layout,
      o.sandbox,
      o.uidRange ?? { first: 200_000, last: 265_535 },
      {
        otherProbes,
        ...o.protections,
        pidsMax: o.pidsMax,
      },
      o.egress,
    );
    this.router = new AppsRouter(o.appsDomain, o.customHosts);
    this.tls = o.tls === undefined ? undefined : attachTls(this.router, o.tls, () => this.tlsPort ?? 443);
    this.stopGraceMs = o.stopGraceMs ?? 5000;
    this.drainTimeoutMs = o.drainTimeoutMs ?? 30_000;
    this.restartBackoffMs = o.restartBackoffMs ?? 1000;
    this.maxScale = o.maxScale ?? 8;
    this.healthTimeoutMaxMs = o.healthTimeoutMaxMs ?? 300_000;
    this.scaling = { ...DEFAULT_SCALING, ...o.scaling };
    this.limits = { ...DEFAULT_LIMITS, ...o.limits };
    this.phases = {
      layout: this.layout,
      confiner: this.confiner,
      containers: this.containers,
      limits: this.limits,
      indexes: o.packageIndexes ?? { pipExtra: [] },
    };
  }

  /**
   * Decides the sandbox and protections (once; SLIPWAY_SANDBOX=bwrap without a working bwrap or
   * with a protection off throws) and opens the apps listener (idempotent); resolves to the bound port.
   */
  async start(): Promise<number> {
    const choice = await this.confiner.choose();
    if (!this.warned) {
      this.warned = true;
      announceConfinement(this.o.logger, this.o.sandbox, choice);
    }
    await watchBuildGroups(this.layout.dataDir, this.stopGraceMs, this.o.logger);
    this.edge ??= openEdge(this.router, {
      settings: this.o.edge ?? { kind: "node", haproxy: "", threads: "auto" },
      port: this.o.appsPort,
      host: this.o.appsHost,
      dataDir: this.layout.dataDir,
      drainMs: this.drainTimeoutMs,
      logger: this.o.logger,
      tls: this.o.tls !== undefined,
    }).then((opened) => {
      this.front = opened.front;
      return opened.port;
    });
    this.boundPort = await this.edge;
    if (this.tls !== undefined && this.o.tls !== undefined)
      this.tlsBound = await this.tls.listen(this.o.tls.port, this.o.appsHost);
    return this.boundPort;
  }

  /** The HTTPS listener's port (the bound one when asked for 0); undefined without TLS. */
  get tlsPort(): number | undefined {
    return this.tls === undefined ? undefined : (this.tlsBound ?? this.o.tls?.port);
  }

  /** The apps listener's port (the bound one when `appsPort` was 0). */
  get appsPort(): number {
    return this.boundPort ?? this.o.appsPort;
  }

  urlFor(deploymentName: string): string {
    // With HTTPS on, apps are reached over it (the plain port only redirects).
    const tls = this.tlsPort;
    if (tls !== undefined)
      return `https://${deploymentName}.${this.o.appsDomain}${tls === 443 ? "" : `:${tls}`}`;
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
    if (built.kind === "static") {
      const group = await staticGroup({
        revisionId: spec.revisionId,
        appDir: this.layout.appDir(spec.deploymentId, spec.revisionId),
        built,
        traffic: state.traffic,
        drainMs: this.drainTimeoutMs,
        tickMs: this.scaling.tickMs,
        log,
        fail,
      });
      return this.serveGroup(state, group, spec, url, log, undefined);
    }

    const { scale, worker, env, launch } = await planLaunch({
      spec,
      built,
      layout: this.layout,
      confiner: this.confiner,
      containers: this.containers,
      network: this.o.containerNetwork ?? "bridge",
      egress: this.o.egress,
      maxScale: this.maxScale,
      stopGraceMs: this.stopGraceMs,
      log,
      fail,
    });

    await mkdir(this.layout.deploymentDir(spec.deploymentId), { recursive: true });
    // Before the app's processes, which may connect at start.
    const cache = await ensureCache({
      spec,
      built,
      layout: this.layout,
      confiner: this.confiner,
      network: this.o.containerNetwork ?? "bridge",
      binary: this.o.redisServer ?? "/usr/bin/redis-server",
      current: state.cache,
      record: state.record,
      stopGraceMs: this.stopGraceMs,
      startTimeoutMs: this.o.healthTimeoutMs,
      log,
    }).catch((err: unknown) => (err instanceof DeployError ? fail(err.message) : Promise.reject(err)));
    if (cache !== undefined) {
      state.cache = cache;
      env.REDIS_URI = cache.uri;
    }
    const healthTimeoutMs = this.healthTimeoutOf(built, log);
    const tail = new Tail(FAILURE_TAIL_LINES);
    const group = new RevisionGroup({
      revisionId: spec.revisionId,
      make: (type, index) =>
        new Replica({
          label: `${type === "api" ? "web" : "worker"}.${index}`,
          launch: launch(type, index),
          env,
          healthPath: type === "api" ? built.healthcheck : undefined,
          healthTimeoutMs,
          stopGraceMs: this.stopGraceMs,
          restartBackoffMs: this.restartBackoffMs,
          log,
          tail,
          record: state.record,
          onRestart: () => recordRestart(spec.deploymentName),
        }),
      // min_scale 0 still starts one: the deploy proves the revision answers before it idles.
      web: Math.max(1, scale.web.min),
      queue: worker === undefined ? 0 : scale.queue.min,
      log,
      traffic: state.traffic,
      scaling: {
        min: scale.web.min,
        max: scale.web.max,
        target: this.scaling.targetConcurrency,
        windowMs: this.scaling.windowMs,
        cooldownMs: this.scaling.cooldownMs,
        idleMs: this.scaling.idleScaleDownMs,
        tickMs: this.scaling.tickMs,
      },
      queueScaling: {
        min: scale.queue.min,
        max: scale.queue.max,
        target: this.scaling.queueCpuTarget,
        // 100% is a worker's cpu limit where one is enforced, else one core.
        cpus: launch("queue", 1).cpus ?? 1,
      },
      drainMs: this.drainTimeoutMs,
      unrouted: () => this.front?.settled() ?? Promise.resolve(),
    });
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
      const printed = tail.lines();
      if (printed.length > 0) {
        log(`slipway: the last ${printed.length} lines the app printed:`);
        for (const line of printed) log(`| ${line}`);
      }
      fail(err instanceof Error ? err.message : String(err));
    } finally {
      state.starting.delete(group);
    }
    if (ctx.signal.aborted || this.closed) {
      await group.stop();
      if (ctx.signal.aborted) throw abortError(ctx.signal);
      throw new Error("the local runtime is closed");
    }

    return this.serveGroup(state, group, spec, url, log, cache);
  }

  /** The switch to a started group: it serves from here on, the replaced one drains. */
  private async serveGroup(
    state: DeploymentSlot,
    group: RevisionGroup,
    spec: RevisionSpec,
    url: string,
    log: (line: string) => void,
    cache: Awaited<ReturnType<typeof ensureCache>>,
  ): Promise<Activation> {
    const previous = state.switchTo(group);
    // The HAProxy front routes to it too before the revision counts as serving.
    await this.front
      ?.routed()
      .catch((err: unknown) =>
        this.o.logger.warn({ err }, "apps edge: HAProxy did not take the switch at once; it retries"),
      );
    // No pids: tenants see their own (sandboxed) numbering, never the host's.
    log(`slipway: revision ${spec.revisionId} is serving at ${url}`);
    // The new revision serves from here on: the old one drains (its in-flight requests finish, at
    // most drainTimeoutMs) after activate returns, so DEPLOYED does not wait for it. The slot keeps
    // it among its retiring groups: teardown and close stop it at once.
    if (previous !== undefined && previous !== group) {
      void state.drain(previous, this.drainTimeoutMs, log).catch((err: unknown) => {
        this.o.logger.warn({ err, revisionId: previous.revisionId }, "draining the replaced revision failed");
      });
    }
    if (cache === undefined && state.cache !== undefined) {
      await state.cache.stop();
      state.cache = undefined;
      log("slipway: this revision asks for no Redis; the deployment's Redis was stopped (its data is kept)");
    }
    return this.activation(url, spec);
  }

  /** The app config's `healthcheck_timeout_s`, bounded by the server's maximum; else the server's timeout. */
  private healthTimeoutOf(built: BuildRecord, log: (line: string) => void): number {
    if (built.kind === "static" || built.healthTimeoutS === undefined) return this.o.healthTimeoutMs;
    const asked = built.healthTimeoutS * 1000;
    if (asked <= this.healthTimeoutMaxMs) return asked;
    log(
      `slipway: healthcheck_timeout_s ${built.healthTimeoutS} is above this server's maximum of ${this.healthTimeoutMaxMs / 1000} s; using the maximum`,
    );
    return this.healthTimeoutMaxMs;
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
    if (engine !== undefined) {
      await removeDeploymentContainers(engine, this.containers.owner, deploymentId);
      await removeDeploymentImages(engine, this.layout.dataDir, deploymentId);
    }
    await this.confiner.removeNetwork(deploymentId);
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
    const draining = state?.drained(revisionId);
    if (draining === undefined) {
      await this.removeRevision(deploymentId, revisionId);
      return;
    }
    // Still finishing requests from its files: they go once it has stopped, and nobody waits for that.
    void draining
      .then(() => this.removeRevision(deploymentId, revisionId))
      .catch((err: unknown) =>
        this.o.logger.warn({ err, revisionId }, "removing a replaced revision failed"),
      );
  }

  /** A revision's files, and the image its Dockerfile build made (an image named by the user stays). */
  private async removeRevision(deploymentId: string, revisionId: string): Promise<void> {
    const record = await readBuildRecord(this.layout.buildRecord(deploymentId, revisionId));
    const engine = record?.kind === "image" ? await this.containers.usable() : undefined;
    if (record?.kind === "image" && engine !== undefined && record.ref !== undefined)
      await removeBuiltImage(engine, record.ref);
    await rm(this.layout.revisionDir(deploymentId, revisionId), { recursive: true, force: true });
  }

  async processes(deploymentId: string): Promise<ProcessInfo[]> {
    return (await this.deployments.get(deploymentId)?.processes()) ?? [];
  }

  /** A deployment's request counts and when it was last requested (undefined: nothing runs here). */
  traffic(deploymentId: string): Traffic | undefined {
    return this.deployments.get(deploymentId)?.traffic;
  }

  health(deploymentId: string): "running" | "stopped" | "unknown" {
    const active = this.deployments.get(deploymentId)?.active;
    if (active === undefined) return "stopped";
    return active.serving ? "running" : "unknown";
  }

  lastRequestAt(deploymentId: string): number | undefined {
    return this.deployments.get(deploymentId)?.traffic.lastRequestAt;
  }

  /** REDIS_URI of the deployment's own Redis while one runs here. */
  redisUri(deploymentId: string): string | undefined {
    const cache = this.deployments.get(deploymentId)?.cache;
    return cache?.running ? cache.uri : undefined;
  }

  /** Where the host reaches the deployment's Redis (its namespace's address, or 127.0.0.1). */
  redisHost(deploymentId: string): string | undefined {
    return this.deployments.get(deploymentId)?.cache?.host;
  }

  async close(): Promise<void> {
    this.closed = true;
    const slots = [...this.deployments.values()];
    await Promise.all(slots.flatMap((s) => [s.stopPending(), s.active?.stop(), s.cache?.stop()]));
    // Activations in progress see `closed` and stop what they started; wait for them to settle.
    await Promise.all(slots.map((s) => s.settled()));
    this.deployments.clear();
    await this.confiner.close();
    await this.confiner.closeNetworks();
    await this.front?.close();
    await this.tls?.close();
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
