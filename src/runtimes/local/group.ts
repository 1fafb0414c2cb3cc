import type { ProcessInfo } from "../interface.ts";
import { Autoscaler, type AutoscaleSettings } from "./autoscaler.ts";
import { abortError } from "./exec.ts";
import type { Replica } from "./replica.ts";
import type { Traffic } from "./traffic.ts";

/** Makes the replica of a process type and index (label, launch, env and health check are the factory's). */
export type ReplicaFactory = (type: "api" | "queue", index: number) => Replica;

export interface GroupOptions {
  revisionId: string;
  make: ReplicaFactory;
  /** API processes the activation starts (0: a min_scale 0 app that is idle until its first request). */
  web: number;
  queue: number;
  /** The deploy log of the activation that started it; kept for crash and scale lines. */
  log: (line: string) => void;
  traffic: Traffic;
  /** Autoscaling between min and max; how often the router's traffic is sampled. */
  scaling: AutoscaleSettings & { tickMs: number };
  /** Longest wait for a scaled-down process's in-flight requests. */
  drainMs: number;
}

/**
 * The processes of one revision of one deployment: its API processes (routed, round-robin over the
 * healthy ones, scaled by the autoscaler and woken from zero by a request) and its queue workers
 * (not routed, a fixed count).
 */
export class RevisionGroup {
  readonly revisionId: string;
  readonly log: (line: string) => void;
  readonly traffic: Traffic;
  /** API processes, ready or starting; only ready ones are picked. */
  private web: Replica[] = [];
  private readonly workers: Replica[] = [];
  /** Scaled down, finishing their in-flight requests. */
  private readonly leaving = new Set<Replica>();
  private next = 0;
  private supervised = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private scaling: Promise<void> | undefined;
  private waking: Promise<boolean> | undefined;
  private readonly autoscaler: Autoscaler;

  constructor(private readonly o: GroupOptions) {
    this.revisionId = o.revisionId;
    this.log = o.log;
    this.traffic = o.traffic;
    this.autoscaler = new Autoscaler(o.scaling);
    for (let i = 1; i <= o.web; i++) this.web.push(o.make("api", i));
    for (let i = 1; i <= o.queue; i++) this.workers.push(o.make("queue", i));
  }

  /** Starts every process in parallel; the first failure stops them all and is thrown. */
  async start(signal: AbortSignal): Promise<void> {
    await this.startAll([...this.web, ...this.workers], signal);
  }

  /** From now on crashes restart, and the autoscaler runs. */
  supervise(): void {
    this.supervised = true;
    for (const r of [...this.web, ...this.workers]) r.supervise();
    this.timer = setInterval(() => this.tick(), this.o.scaling.tickMs);
    this.timer.unref();
  }

  /** The next healthy API process, taken in turn; undefined when none is serving. */
  pick(): Replica | undefined {
    const n = this.web.length;
    for (let i = 0; i < n; i++) {
      const candidate = this.web[(this.next + i) % n];
      if (candidate?.ready) {
        this.next = (this.next + i + 1) % n;
        return candidate;
      }
    }
    return undefined;
  }

  /** Whether it has no API process on purpose (min_scale 0, idle), or one is being woken: a request waits. */
  get scaledToZero(): boolean {
    return this.web.length === 0 || this.waking !== undefined;
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
      const ok = await this.add(1, new AbortController().signal);
      this.waking = undefined;
      if (!ok) this.log("slipway: cold start failed; requests get 503 until the next one succeeds");
      return ok;
    })();
    return this.waking;
  }

  get serving(): boolean {
    return this.web.length === 0 || this.web.some((r) => r.ready);
  }

  get allReady(): boolean {
    return [...this.web, ...this.workers].every((r) => r.ready);
  }

  /** Waits for in-flight requests (at most `drainMs`), then stops every process. */
  async retire(drainMs: number): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.web.map((r) => r.whenIdle(drainMs)));
    await this.stop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    const all = [...this.web, ...this.workers, ...this.leaving];
    await Promise.all(all.map((r) => r.stop()));
  }

  /** The processes as the listing shows them (`draining`: this revision is being replaced). */
  async processes(draining: boolean): Promise<ProcessInfo[]> {
    const entries = [
      ...this.web.map((r) => ({ r, type: "api" as const, leaving: draining })),
      ...[...this.leaving].map((r) => ({ r, type: "api" as const, leaving: true })),
      ...this.workers.map((r) => ({ r, type: "queue" as const, leaving: draining })),
    ];
    return Promise.all(
      entries.map(async ({ r, type, leaving }) => {
        const info = await r.info();
        return {
          type,
          index: Number(r.label.split(".")[1]),
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

  /** One autoscaler step: sample the traffic, and apply a decision unless a change is under way. */
  private tick(): void {
    const now = Date.now();
    this.autoscaler.observe(now, this.traffic.takeAverage());
    if (this.scaling !== undefined || this.waking !== undefined || this.stopped) return;
    const current = this.web.length;
    const decision = this.autoscaler.decide(now, current, this.traffic.lastRequestAt, this.traffic.inflight);
    if (decision === undefined || decision.desired === current) return;
    this.log(`slipway: scaling API processes from ${current} to ${decision.desired}: ${decision.reason}`);
    this.scaling = (
      decision.desired > current
        ? this.add(decision.desired - current, new AbortController().signal).then(() => undefined)
        : this.remove(current - decision.desired)
    ).finally(() => {
      this.scaling = undefined;
    });
  }

  /** Starts `count` more API processes; each joins the rotation once healthy. */
  private async add(count: number, signal: AbortSignal): Promise<boolean> {
    const used = new Set(this.web.map((r) => r.label));
    const fresh: Replica[] = [];
    for (let i = 1; fresh.length < count; i++) {
      if (!used.has(`web.${i}`)) fresh.push(this.o.make("api", i));
    }
    this.web.push(...fresh);
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
    this.web = this.web.filter((r) => !failed.includes(r));
    await Promise.all(failed.map((r) => r.stop()));
    for (const r of fresh) {
      if (failed.includes(r)) continue;
      if (this.stopped) await r.stop();
      else if (this.supervised) r.supervise();
    }
    return !this.stopped && failed.length < fresh.length;
  }

  /** Takes the highest-numbered API processes out of the rotation, lets them finish, stops them. */
  private async remove(count: number): Promise<void> {
    const sorted = [...this.web].sort((a, b) => a.label.localeCompare(b.label, "en", { numeric: true }));
    const going = sorted.slice(sorted.length - count);
    this.web = this.web.filter((r) => !going.includes(r));
    for (const r of going) this.leaving.add(r);
    await Promise.all(going.map((r) => r.whenIdle(this.o.drainMs)));
    await Promise.all(going.map((r) => r.stop()));
    for (const r of going) this.leaving.delete(r);
    this.log(`slipway: ${going.map((r) => r.label).join(", ")} stopped`);
  }
}
