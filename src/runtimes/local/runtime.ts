import { mkdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxMode, UidRange } from "../../config.ts";
import {
  type Activation,
  DeployError,
  type PhaseContext,
  type PreparedSource,
  type RevisionSpec,
  type Runtime,
  SourceError,
} from "../interface.ts";
import { type BuildRecord, readBuildRecord, resolveAppConfig, writeBuildRecord } from "./app-config.ts";
import { runBuild } from "./build.ts";
import { Confiner, UNSANDBOXED_WARNING } from "./confine.ts";
import { containerLaunches, removeDeploymentContainers } from "./container.ts";
import { type ContainerNetwork, type EngineChoice, EngineFinder } from "./containers/engine.ts";
import { fetchImage, imagePresent, imageRecord, noEngineMessage } from "./containers/revision.ts";
import { withDiskLimit } from "./disk-limit.ts";
import { abortError } from "./exec.ts";
import { RevisionGroup } from "./group.ts";
import { Layout } from "./layout.ts";
import { buildDiskExceeded, DEFAULT_LIMITS, type LocalLimits } from "./limits.ts";
import { ProcessRecord } from "./orphans.ts";
import { type Launch, Replica } from "./replica.ts";
import { AppsRouter } from "./router.ts";
import { fetchSource } from "./source.ts";

/** What the runtime reports outside any revision's logs (pino's and Fastify's loggers fit). */
export interface RuntimeLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface LocalRuntimeOptions {
  dataDir: string;
  /** Port of the apps listener; 0 picks a free one (see `appsPort` after `start`). */
  appsPort: number;
  appsDomain: string;
  appsHost: string;
  /** How long every process of a revision has to answer its health check. */
  healthTimeoutMs: number;
  logger: RuntimeLogger;
  /** SIGTERM → SIGKILL grace when stopping processes (default 5 s). */
  stopGraceMs?: number;
  /** Longest wait for in-flight requests of a replaced revision (default 30 s). */
  drainTimeoutMs?: number;
  /** First restart delay after a crash, doubled per crash in a row (default 1 s). */
  restartBackoffMs?: number;
  /** Upper bound on processes per revision (default 8): one machine, many apps. */
  maxScale?: number;
  /** Source and build disk limits (defaults: 1 GiB, 100k files, 4096 MB). */
  limits?: Partial<LocalLimits>;
  /** Engine for image revisions (default auto: podman, else docker). */
  containerEngine?: EngineChoice;
  /** Network of image revisions (default bridge, the app's port published on loopback). */
  containerNetwork?: ContainerNetwork;
  /** SLIPWAY_SANDBOX: how build commands and app processes are confined (README "Sandbox"). */
  sandbox: SandboxMode;
  /** SLIPWAY_APP_UID_RANGE: deployments' own uids when Slipway runs as root (default 200000-265535). */
  uidRange?: UidRange;
}

/** What runs (and is starting, and is draining) for one deployment. */
interface DeploymentState {
  id: string;
  name: string;
  active: RevisionGroup | undefined;
  starting: Set<RevisionGroup>;
  /** Replaced revisions still finishing their in-flight requests. */
  retiring: Set<RevisionGroup>;
  /** Activations and teardown of one deployment run one at a time, in call order. */
  queue: Promise<unknown>;
  record: ProcessRecord;
  reaped: boolean;
}

function positiveInt(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : undefined;
}

/**
 * The `local` data plane: builds revisions in directories under the data dir, runs them as
 * process groups on this machine, and serves them through one apps listener by Host name.
 * Memory limits: see README.md in this folder.
 */
export class LocalRuntime implements Runtime {
  readonly name = "local";
  private readonly layout: Layout;
  private readonly router: AppsRouter;
  private readonly deployments = new Map<string, DeploymentState>();
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

  /** Log lines of the revision, with host paths shown as the app sees them. */
  private logTo(spec: RevisionSpec, ctx: PhaseContext, stream: "build" | "deploy"): (line: string) => void {
    const hide = this.confiner.hidePaths(spec.deploymentId, spec.revisionId);
    return (line) => ctx.log(stream, hide(line));
  }

  /** The apps listener's port (the bound one when `appsPort` was 0). */
  get appsPort(): number {
    return this.boundPort ?? this.o.appsPort;
  }

  urlFor(deploymentName: string): string {
    return `http://${deploymentName}.${this.o.appsDomain}:${this.appsPort}`;
  }

  async prepare(spec: RevisionSpec, ctx: PhaseContext): Promise<PreparedSource> {
    const log = this.logTo(spec, ctx, "build");
    const revisionDir = this.layout.revisionDir(spec.deploymentId, spec.revisionId);
    const appDir = this.layout.appDir(spec.deploymentId, spec.revisionId);
    // Nothing of a revision that may not run here is fetched; activate fails it (DEPLOY_FAILED).
    const refusal = await this.confiner.refusal(spec);
    if (refusal !== undefined) {
      log(`slipway: not fetching the source: ${refusal}`);
      return {};
    }
    await rm(revisionDir, { recursive: true, force: true });
    await mkdir(appDir, { recursive: true });
    await mkdir(this.layout.homeDir, { recursive: true });
    try {
      if (ctx.signal.aborted) throw abortError(ctx.signal);
      if (spec.source.kind === "image") {
        await fetchImage(this.containers, spec.source.imageUri, ctx.signal, log);
        return {};
      }
      return await fetchSource(this.layout, spec, appDir, ctx.signal, log, this.limits);
    } catch (err) {
      await rm(revisionDir, { recursive: true, force: true });
      if (ctx.signal.aborted) throw abortError(ctx.signal);
      if (err instanceof SourceError) log(`error: ${err.message}`);
      throw err;
    }
  }

  async build(spec: RevisionSpec, ctx: PhaseContext): Promise<void> {
    const log = this.logTo(spec, ctx, "build");
    const refusal = await this.confiner.refusal(spec);
    if (refusal !== undefined) {
      log(`slipway: not building: ${refusal}`);
      return;
    }
    const revisionDir = this.layout.revisionDir(spec.deploymentId, spec.revisionId);
    const appDir = this.layout.appDir(spec.deploymentId, spec.revisionId);
    try {
      if (ctx.signal.aborted) throw abortError(ctx.signal);
      let record: BuildRecord;
      if (spec.source.kind === "image") {
        record = await imageRecord(this.containers, spec.source.imageUri, log);
      } else {
        await stat(appDir);
        // The config is checked first: a bad one fails in a second, not after a long install.
        const config = await resolveAppConfig(appDir, spec.frameworkConfigPath, log);
        const confined = await this.confiner.confine(spec.deploymentId, appDir, true);
        if (!confined.sandboxed) log(UNSANDBOXED_WARNING);
        const limitBytes = this.limits.buildDiskBytes;
        const exceeded = () => buildDiskExceeded(limitBytes);
        await withDiskLimit({ dir: revisionDir, limitBytes, signal: ctx.signal, exceeded, log }, (signal) =>
          runBuild({
            appDir,
            installCommand: spec.installCommand,
            buildCommand: spec.buildCommand,
            env: confined.env,
            wrap: confined.wrap,
            signal,
            log,
          }),
        );
        record = { version: 1, kind: "process", ...config };
      }
      if (ctx.signal.aborted) throw abortError(ctx.signal);
      await writeBuildRecord(this.layout.buildRecord(spec.deploymentId, spec.revisionId), record);
      log("Build finished.");
    } catch (err) {
      await rm(revisionDir, { recursive: true, force: true });
      if (ctx.signal.aborted) throw abortError(ctx.signal);
      throw err;
    }
  }

  async isBuilt(spec: RevisionSpec): Promise<boolean> {
    const record = await readBuildRecord(this.layout.buildRecord(spec.deploymentId, spec.revisionId));
    if (record === undefined) return false;
    if (record.kind === "image") return imagePresent(this.containers, record.image);
    try {
      return (await stat(this.layout.appDir(spec.deploymentId, spec.revisionId))).isDirectory();
    } catch {
      return false;
    }
  }

  async activate(spec: RevisionSpec, ctx: PhaseContext): Promise<Activation> {
    if (this.closed) throw new Error("the local runtime is closed");
    await this.start();
    const state = this.stateFor(spec.deploymentId, spec.deploymentName);
    return this.serialize(state, () => this.activateNow(state, spec, ctx));
  }

  private async activateNow(
    state: DeploymentState,
    spec: RevisionSpec,
    ctx: PhaseContext,
  ): Promise<Activation> {
    const log = this.logTo(spec, ctx, "deploy");
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
      const file = this.recordFile(spec.deploymentId);
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

    if (state.name !== spec.deploymentName) {
      // Renamed: the old host stops routing; the new one serves what runs until the switch below.
      if (state.active !== undefined) {
        this.router.delete(state.name, state.active);
        this.router.set(spec.deploymentName, state.active);
      }
      state.name = spec.deploymentName;
    }

    if (state.active?.revisionId === spec.revisionId && state.active.allReady) {
      log(`slipway: revision ${spec.revisionId} is already serving at ${url}`);
      return this.activation(url, spec);
    }

    const record = await readBuildRecord(this.layout.buildRecord(spec.deploymentId, spec.revisionId));
    if (record === undefined) fail(`revision ${spec.revisionId} has no build output; build it first`);
    const built: BuildRecord = record;

    const resources = spec.resourceSpec ?? {};
    const requested = resources.min_scale;
    let scale = positiveInt(requested) ?? 1;
    if (requested !== undefined && positiveInt(requested) === undefined) {
      log(
        `slipway: min_scale ${JSON.stringify(requested)} is not a positive whole number; running 1 process`,
      );
    }
    if (scale > this.maxScale) {
      log(
        `slipway: min_scale ${scale} is above this machine's limit of ${this.maxScale}; running ${this.maxScale}`,
      );
      scale = this.maxScale;
    }
    const memoryMb = positiveInt(resources.memory_limit_mb);

    let env: Record<string, string>;
    let launch: (index: number) => Launch;
    if (built.kind === "image") {
      const engine = await this.containers.usable();
      if (engine === undefined) fail(noEngineMessage(this.containers));
      env = { ...built.env, ...spec.env };
      const container = containerLaunches({
        engine,
        image: built.image,
        deploymentId: spec.deploymentId,
        revisionId: spec.revisionId,
        owner: this.containers.owner,
        network: this.o.containerNetwork ?? "bridge",
        envDir: this.layout.revisionDir(spec.deploymentId, spec.revisionId),
        resources,
        stopGraceMs: this.stopGraceMs,
        log,
      });
      launch = (index) => ({ kind: "container", ...container(index) });
      log(
        `slipway: running ${scale} container${scale === 1 ? "" : "s"} of ${built.ref ?? built.image} with ${engine.name}`,
      );
    } else {
      const appDir = this.layout.appDir(spec.deploymentId, spec.revisionId);
      const confined = await this.confiner.confine(spec.deploymentId, appDir, false);
      if (!confined.sandboxed) log(UNSANDBOXED_WARNING);
      env = { ...confined.env, ...built.env, ...spec.env };
      if (memoryMb !== undefined) {
        // Node sizes its heap from the machine, not from rlimits: cap it so it fails with a clear
        // "heap out of memory" before the data limit turns allocations into crashes.
        const heapMb = Math.max(16, Math.floor(memoryMb * 0.75));
        env.NODE_OPTIONS = [env.NODE_OPTIONS, `--max-old-space-size=${heapMb}`].filter(Boolean).join(" ");
        log(`slipway: memory limit ${memoryMb} MB per process (data segment limit; Node heap ${heapMb} MB)`);
      }
      launch = () => ({
        kind: "process",
        command: built.start,
        wrap: confined.wrap,
        dataLimitBytes: memoryMb === undefined ? undefined : memoryMb * 1024 * 1024,
      });
      log(`slipway: starting ${scale} process${scale === 1 ? "" : "es"}: ${built.start}`);
    }

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

    // The switch: from this line on every new request goes to the new processes.
    const previous = state.active;
    state.active = group;
    this.router.set(spec.deploymentName, group);
    group.supervise();
    // No pids: tenants see their own (sandboxed) numbering, never the host's.
    log(`slipway: revision ${spec.revisionId} is serving at ${url}`);
    if (previous !== undefined && previous !== group) {
      log(`slipway: draining revision ${previous.revisionId}`);
      state.retiring.add(previous);
      try {
        await previous.retire(this.drainTimeoutMs);
      } finally {
        state.retiring.delete(previous);
      }
      log(`slipway: revision ${previous.revisionId} stopped`);
    }
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
      // What is starting or draining is stopped now, not after its health or drain timeout.
      const starting = [...state.starting, ...state.retiring];
      state.starting.clear();
      await Promise.all(starting.map((g) => g.stop()));
      await this.serialize(state, async () => {
        const active = state.active;
        state.active = undefined;
        if (active !== undefined) {
          this.router.delete(state.name, active);
          await active.stop();
        }
      });
      this.deployments.delete(deploymentId);
    }
    const dir = this.layout.deploymentDir(deploymentId);
    await ProcessRecord.reap(this.recordFile(deploymentId), this.stopGraceMs);
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
    const groups: RevisionGroup[] = [];
    for (const state of this.deployments.values()) {
      groups.push(...state.starting, ...state.retiring);
      state.starting.clear();
      if (state.active !== undefined) groups.push(state.active);
    }
    await Promise.all(groups.map((g) => g.stop()));
    // Activations in progress see `closed` and stop what they started; wait for them to settle.
    await Promise.all([...this.deployments.values()].map((s) => s.queue));
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

  private recordFile(deploymentId: string): string {
    return join(this.layout.deploymentDir(deploymentId), "processes.json");
  }

  /** The deployment's state, created on first use (named `name` until an activation renames it). */
  private stateFor(deploymentId: string, name: string): DeploymentState {
    let state = this.deployments.get(deploymentId);
    if (state === undefined) {
      state = {
        id: deploymentId,
        name,
        active: undefined,
        starting: new Set(),
        retiring: new Set(),
        queue: Promise.resolve(),
        record: new ProcessRecord(this.recordFile(deploymentId)),
        reaped: false,
      };
      this.deployments.set(deploymentId, state);
    }
    return state;
  }

  private serialize<T>(state: DeploymentState, task: () => Promise<T>): Promise<T> {
    const result = state.queue.then(task, task);
    state.queue = result.catch(() => undefined);
    return result;
  }
}
