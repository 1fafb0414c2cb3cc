// Why over 300 lines: one revision's processes, their routing, scaling and waking share its state.
import type { ProcessInfo } from "../../interface.ts";
import { abortError } from "../../shared/exec.ts";
import type { StaticSite } from "../routing/static-site.ts";
import { Autoscaler, type AutoscaleSettings, CPU, type Decision } from "../scaling/autoscaler.ts";
import type { Traffic } from "../scaling/traffic.ts";
import { CpuMeter } from "./cpu-usage.ts";
import type { Replica } from "./replica.ts";

export type ProcessType = "api" | "queue";

/** Makes the replica of a process type and index (label, launch, env and health check are the factory's). */
export type ReplicaFactory = (type: ProcessType, index: number) => Replica;

export interface GroupOptions {
  revisionId: string;
  make: ReplicaFactory;
  /** API processes the activation starts (0: a min_scale 0 app that is idle until its first request). */
  web: number;
  queue: number;
  /** The deploy log of the activation that started it; kept for crash and scale lines. */
  log: (line: string) => void;
  traffic: Traffic;
  /** Autoscaling of API processes between min and max; how often traffic and cpu are sampled. */
  scaling: AutoscaleSettings & { tickMs: number };
  /**
   * Autoscaling of queue workers on their cpu (`target`: a share of `cpus`), with the API's window
   * and cool-down; `cpus`: each worker's cpu limit, else 1 (a core).
   */
  queueScaling: { min: number; max: number; target: number; cpus: number };
  /** Longest wait for a scaled-down process's in-flight requests. */
  drainMs: number;
  /** A static revision: the router serves these files, and the group has no process (web and queue 0). */
  site?: StaticSite;
  /**
   * Settles once no edge sends new requests to processes taken out of the rotation and the HAProxy
   * front's requests on them have finished; the Node edge's are then awaited. Absent: at once.
   */
  unrouted?: () => Promise<void>;
}

/** "web.2" → 2. */
const indexOf = (r: Replica) => Number(r.label.split(".")[1]);

/**
 * The processes of one revision of one deployment: its API processes (routed, round-robin over the
 * healthy ones, scaled on their requests in flight and woken from zero by a request) and its queue
 * workers (not routed, scaled on their cpu, never to zero). One Autoscaler per type decides.
 */
export class RevisionGroup {
  readonly revisionId: string;
  readonly log: (line: string) => void;
  readonly traffic: Traffic;
  readonly site: StaticSite | undefined;
  /** Processes by type, ready or starting; only ready API processes are picked. */
  private readonly procs: Record<ProcessType, Replica[]> = { api: [], queue: [] };
  /** Scaled down, finishing their in-flight requests (queue workers: their stop grace). */
  private readonly leaving = new Map<Replica, ProcessType>();
  private next = 0;
  private supervised = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** A scale change of that type under way. */
  private readonly scaling: Record<ProcessType, Promise<void> | undefined> = {
    api: undefined,
    queue: undefined,
  };
  private waking: Promise<boolean> | undefined;
  private readonly autoscalers: Record<ProcessType, Autoscaler>;
  private readonly cpu = new CpuMeter();
  /** A read of the workers' cpu under way (it reads /proc). */
  private measuring = false;

  constructor(private readonly o: GroupOptions) {
    this.revisionId = o.revisionId;
    this.log = o.log;
    this.traffic = o.traffic;
    this.site = o.site;
    const q = o.queueScaling;
    this.autoscalers = {
      api: new Autoscaler(o.scaling),
      // Never to zero: no idle period, and at least one.
      queue: new Autoscaler({
        ...o.scaling,
        min: Math.max(1, q.min),
        max: Math.max(1, q.min, q.max),
        target: q.target,
        idleMs: undefined,
        metric: CPU,
      }),
    };
    for (let i = 1; i <= o.web; i++) this.procs.api.push(o.make("api", i));
    for (let i = 1; i <= o.queue; i++) this.procs.queue.push(o.make("queue", i));
  }

  /** Starts every process in parallel; the first failure stops them all and is thrown. */
  async start(signal: AbortSignal): Promise<void> {
    await this.startAll([...this.procs.api, ...this.procs.queue], signal);
  }

  /** From now on crashes restart, and the autoscaler runs. */
  supervise(): void {
    this.supervised = true;
    for (const r of [...this.procs.api, ...this.procs.queue]) r.supervise();
    // Nothing to scale: the router serves a static site's files itself.
    if (this.site !== undefined) return;
    this.timer = setInterval(() => this.tick(), this.o.scaling.tickMs);
    this.timer.unref();
  }

  /** The next healthy API process, taken in turn; undefined when none is serving. */
  pick(): Replica | undefined {
    const n = this.procs.api.length;
    for (let i = 0; i < n; i++) {
      const candidate = this.procs.api[(this.next + i) % n];
      if (candidate?.ready) {
        this.next = (this.next + i + 1) % n;
        return candidate;
      }
    }
    return undefined;
  }

  /** The API processes requests may be sent to now (the HAProxy front's servers). */
  routable(): Replica[] {
    return this.procs.api.filter((r) => r.ready);
  }

  /** Whether it has no API process on purpose (min_scale 0, idle), or one is being woken: a request waits. */
  get scaledToZero(): boolean {
    return this.procs.api.length === 0 || this.waking !== undefined;
  }

  /**
   * A cold start: one API process is started for the request that found none (requests arriving
   * meanwhile wait for the same one). False when it failed its health check or the group stopped.
   */
  wake(): Promise<boolean> {
    if (this.waking !== undefined) return this.waking;
    if (!this.scaledToZero || this.stopped)
      return Promise.resolve(!this.stopped && this.pick() !== undefined);
    this.waking = (async () => {
      this.log("slipway: cold start: a request arrived with no API process running; starting web.1");
      const ok = await this.add("api", 1, new AbortController().signal);
      this.waking = undefined;
      if (!ok) this.log("slipway: cold start failed; requests get 503 until the next one succeeds");
      return ok;
    })();
    return this.waking;
  }

  get serving(): boolean {
    return this.procs.api.length === 0 || this.procs.api.some((r) => r.ready);
  }

  get allReady(): boolean {
    return [...this.procs.api, ...this.procs.queue].every((r) => r.ready);
  }

  /** Waits for in-flight requests (at most `drainMs`), then stops every process. */
  async retire(drainMs: number): Promise<void> {
    clearInterval(this.timer);
    await this.o.unrouted?.();
    await Promise.all([...this.procs.api.map((r) => r.whenIdle(drainMs)), this.site?.whenIdle(drainMs)]);
    await this.stop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    const all = [...this.procs.api, ...this.procs.queue, ...this.leaving.keys()];
    await Promise.all(all.map((r) => r.stop()));
  }

  /** The processes as the listing shows them (`draining`: this revision is being replaced). */
  async processes(draining: boolean): Promise<ProcessInfo[]> {
    const entries = [
      ...this.procs.api.map((r) => ({ r, type: "api" as const, leaving: draining })),
      ...this.procs.queue.map((r) => ({ r, type: "queue" as const, leaving: draining })),
      ...[...this.leaving].map(([r, type]) => ({ r, type, leaving: true })),
    ];
    return Promise.all(
      entries.map(async ({ r, type, leaving }) => {
        const info = await r.info();
        return {
          type,
          index: indexOf(r),
          id: r.id,
          revisionId: this.revisionId,
          ...info,
          state: leaving && info.state !== "stopped" ? "draining" : info.state,
        };
      }),
    );
  }

  private async startAll(replicas: Replica[], signal: AbortSignal): Promise<void> {
    const inner = new AbortController();
    const onAbort = () => inner.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    let failure: { error: unknown } | undefined;
    await Promise.all(
      replicas.map((r) =>
        r.start(inner.signal).catch((error: unknown) => {
          failure ??= { error };
          inner.abort(error);
        }),
      ),
    );
    signal.removeEventListener("abort", onAbort);
    if (failure !== undefined) {
      await this.stop();
      throw signal.aborted ? abortError(signal) : failure.error;
    }
  }

  /** One autoscaler step per type: sample traffic and cpu, and apply a decision unless a change is under way. */
  private tick(): void {
    const now = Date.now();
    this.autoscalers.api.observe(now, this.traffic.takeAverage());
    if (this.waking === undefined) {
      const { lastRequestAt, inflight } = this.traffic;
      this.apply("api", (n) => this.autoscalers.api.decide(now, n, lastRequestAt, inflight));
    }
    if (this.procs.queue.length > 0 && !this.measuring) {
      this.measuring = true;
      void this.measureWorkers().finally(() => {
        this.measuring = false;
      });
    }
  }

  /** Samples the queue workers' cpu (running ones only; a starting one is not yet measured). */
  private async measureWorkers(): Promise<void> {
    const cpus = this.o.queueScaling.cpus;
    const groups = this.procs.queue.flatMap((r) =>
      r.ready && r.pid !== undefined ? [{ pgid: r.pid, cpus }] : [],
    );
    const now = Date.now();
    const total = await this.cpu.sample(groups, now);
    this.autoscalers.queue.observe(now, total);
    this.apply("queue", (n) => this.autoscalers.queue.decide(now, n));
  }

  /** Asks `decide` (with the current count) only when no change of `type` is under way, and applies it. */
  private apply(type: ProcessType, decide: (current: number) => Decision | undefined): void {
    if (this.scaling[type] !== undefined || this.stopped) return;
    const current = this.procs[type].length;
    const decision = decide(current);
    if (decision === undefined || decision.desired === current) return;
    const what = type === "api" ? "API processes" : "queue workers";
    this.log(`slipway: scaling ${what} from ${current} to ${decision.desired}: ${decision.reason}`);
    this.scaling[type] = (
      decision.desired > current
        ? this.add(type, decision.desired - current, new AbortController().signal).then(() => undefined)
        : this.remove(type, current - decision.desired)
    ).finally(() => {
      this.scaling[type] = undefined;
    });
  }

  /** Starts `count` more processes of `type`; API ones join the rotation once healthy. */
  private async add(type: ProcessType, count: number, signal: AbortSignal): Promise<boolean> {
    const leaving = [...this.leaving].filter(([, t]) => t === type).map(([r]) => r);
    const used = new Set([...this.procs[type], ...leaving].map(indexOf));
    const fresh: Replica[] = [];
    for (let i = 1; fresh.length < count; i++) if (!used.has(i)) fresh.push(this.o.make(type, i));
    this.procs[type] = [...this.procs[type], ...fresh];
    const results = await Promise.all(
      fresh.map((r) =>
        r.start(signal).then(
          () => true,
          (err: unknown) => {
            this.log(`slipway: ${err instanceof Error ? err.message : String(err)}; not added`);
            return false;
          },
        ),
      ),
    );
    const failed = fresh.filter((_, i) => !results[i]);
    this.procs[type] = this.procs[type].filter((r) => !failed.includes(r));
    await Promise.all(failed.map((r) => r.stop()));
    for (const r of fresh) {
      if (failed.includes(r)) continue;
      if (this.stopped) await r.stop();
      else if (this.supervised) r.supervise();
    }
    return !this.stopped && failed.length < fresh.length;
  }

  /**
   * Takes the highest-numbered processes of `type` away (API ones out of the rotation, finishing
   * their requests first), then stops them: a queue worker gets SIGTERM and the stop grace.
   */
  private async remove(type: ProcessType, count: number): Promise<void> {
    const sorted = [...this.procs[type]].sort((a, b) =>
      a.label.localeCompare(b.label, "en", { numeric: true }),
    );
    const going = sorted.slice(sorted.length - count);
    this.procs[type] = this.procs[type].filter((r) => !going.includes(r));
    for (const r of going) this.leaving.set(r, type);
    if (type === "api") await this.o.unrouted?.();
    await Promise.all(going.map((r) => r.whenIdle(this.o.drainMs)));
    await Promise.all(going.map((r) => r.stop()));
    for (const r of going) this.leaving.delete(r);
    this.log(`slipway: ${going.map((r) => r.label).join(", ")} stopped`);
  }
}
