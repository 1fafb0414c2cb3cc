/**
 * The decision of how many processes of one type a deployment should run, after Knative's
 * concurrency autoscaler (and the HPA's cpu target, which is the same rule): the total of a metric
 * over all processes, averaged over a stable window and divided by the target per process, is the
 * wanted count. API processes are measured by the router's in-flight requests, queue workers by
 * their cpu (processes/group.ts feeds both). Up when the stable window (or, sooner, the panic window at twice
 * the target, where the metric has one) asks for more; down only once fewer have been enough for
 * the whole cool-down; to zero (min 0 only) after the idle period without a request. Pure: time
 * and values are passed in, nothing here starts a timer or a process (processes/group.ts does).
 */

/** What is measured, as a deploy-log line says it. */
export interface Metric {
  /** An amount of it: "12.4 requests in flight", "85% cpu". */
  say(value: number): string;
  /** A short window's average per process at this multiple of the target scales up at once; none: never. */
  panicFactor?: number;
}

/** In-flight requests through the router (API processes). */
export const CONCURRENCY: Metric = {
  say: (n) => `${round1(n)} requests in flight`,
  panicFactor: 2,
};

/** Cpu time per wall time, 1 being a whole core or the process's whole cpu limit (queue workers). */
export const CPU: Metric = { say: (n) => `${Math.round(n * 100)}% cpu` };

export interface AutoscaleSettings {
  min: number;
  max: number;
  /** Wanted amount of the metric per process. */
  target: number;
  /** The average that decides scaling up, and that a scale-down must hold for. */
  windowMs: number;
  /** How long fewer processes must have been enough before scaling down. */
  cooldownMs: number;
  /** min 0: no request for this long stops every process; undefined: never to zero. */
  idleMs?: number;
  /** Default: in-flight requests (CONCURRENCY). */
  metric?: Metric;
}

export interface Decision {
  desired: number;
  reason: string;
}

/** One observation: the time-weighted average in-flight requests since the previous one. */
interface Sample {
  at: number;
  value: number;
}

/** The panic window as a fraction of the stable window (Knative's default is 10%, at least one tick here). */
const PANIC_SHARE = 0.25;

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

export class Autoscaler {
  private samples: Sample[] = [];
  private firstAt: number | undefined;
  /** Since when the wanted count has been below the current one (cool-down), if it is. */
  private lowSince: number | undefined;
  private lastChangeAt = Number.NEGATIVE_INFINITY;

  private readonly metric: Metric;

  constructor(private readonly s: AutoscaleSettings) {
    this.metric = s.metric ?? CONCURRENCY;
  }

  /** Records the metric's total over all processes, averaged over the period that ends at `at`. */
  observe(at: number, value: number): void {
    this.firstAt ??= at;
    this.samples.push({ at, value });
    const keepFrom = at - this.s.windowMs;
    while ((this.samples[0]?.at ?? at) < keepFrom) this.samples.shift();
  }

  /**
   * A scale change, or undefined to keep `current`. `lastRequestAt` (the latest request's start or
   * end) and `inflight` matter only to the idle period of min 0.
   */
  decide(now: number, current: number, lastRequestAt?: number, inflight = 0): Decision | undefined {
    const { min, max, target, windowMs, cooldownMs, idleMs } = this.s;
    const { say, panicFactor } = this.metric;
    if (current === 0) return undefined; // a request wakes it (the router's cold start)
    const idleFor = now - (lastRequestAt ?? this.firstAt ?? now);
    if (min === 0 && idleMs !== undefined && inflight === 0 && idleFor >= idleMs) {
      return this.changed(now, 0, `no request for ${Math.round(idleFor / 1000)} s (min_scale 0)`);
    }
    const stable = this.average(now - windowMs);
    const panic = this.average(now - Math.max(1, windowMs * PANIC_SHARE));
    const full = this.firstAt !== undefined && now - this.firstAt >= windowMs;
    const floor = Math.max(min, 1);
    const want = (avg: number) => Math.min(max, Math.max(floor, Math.ceil(avg / target)));
    if (panicFactor !== undefined && panic / current >= panicFactor * target && want(panic) > current) {
      return this.changed(
        now,
        want(panic),
        `panic: ${say(panic / current)} per process over the last ${Math.round((windowMs * PANIC_SHARE) / 100) / 10} s (target ${say(target)})`,
      );
    }
    if (full && stable / current > target && want(stable) > current) {
      return this.changed(
        now,
        want(stable),
        `average ${say(stable / current)} per process over ${windowMs / 1000} s is above the target of ${say(target)}`,
      );
    }
    const wanted = want(stable);
    if (wanted >= current) {
      this.lowSince = undefined;
      return undefined;
    }
    this.lowSince ??= now;
    if (now - this.lowSince < cooldownMs || now - this.lastChangeAt < cooldownMs) return undefined;
    return this.changed(
      now,
      wanted,
      `${say(stable)} in all on average over ${windowMs / 1000} s needs ${wanted} (target ${say(target)} per process) for ${Math.round((now - this.lowSince) / 1000)} s`,
    );
  }

  private changed(now: number, desired: number, reason: string): Decision {
    this.lastChangeAt = now;
    this.lowSince = undefined;
    return { desired, reason };
  }

  private average(from: number): number {
    const inWindow = this.samples.filter((x) => x.at > from);
    if (inWindow.length === 0) return 0;
    return inWindow.reduce((sum, x) => sum + x.value, 0) / inWindow.length;
  }
}
