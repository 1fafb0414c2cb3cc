/**
 * The decision of how many API processes a deployment should run, after Knative's concurrency
 * autoscaler: the router's average in-flight requests over a stable window, divided by the target
 * concurrency per process, is the wanted count. Up when the stable window (or, sooner, the panic
 * window at twice the target) asks for more; down only once fewer have been enough for the whole
 * cool-down; to zero (min 0 only) after the idle period without a request. Pure: time and counts
 * are passed in, nothing here starts a timer or a process (scaler.ts does).
 */

export interface AutoscaleSettings {
  min: number;
  max: number;
  /** Wanted in-flight requests per process. */
  target: number;
  /** The average that decides scaling up, and that a scale-down must hold for. */
  windowMs: number;
  /** How long fewer processes must have been enough before scaling down. */
  cooldownMs: number;
  /** min 0: no request for this long stops every API process. */
  idleMs: number;
}

export interface Decision {
  desired: number;
  reason: string;
}

/** One observation: the time-weighted average in-flight requests since the previous one. */
interface Sample {
  at: number;
  concurrency: number;
}

/** Panic: the short window's average per process at this multiple of the target scales up at once. */
const PANIC_FACTOR = 2;
/** The panic window as a fraction of the stable window (Knative's default is 10%, at least one tick here). */
const PANIC_SHARE = 0.25;

const round1 = (n: number) => Math.round(n * 10) / 10;

export class Autoscaler {
  private samples: Sample[] = [];
  private firstAt: number | undefined;
  /** Since when the wanted count has been below the current one (cool-down), if it is. */
  private lowSince: number | undefined;
  private lastChangeAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly s: AutoscaleSettings) {}

  /** Records the average concurrency of the period that ends at `at`. */
  observe(at: number, concurrency: number): void {
    this.firstAt ??= at;
    this.samples.push({ at, concurrency });
    const keepFrom = at - this.s.windowMs;
    while ((this.samples[0]?.at ?? at) < keepFrom) this.samples.shift();
  }

  /** A scale change, or undefined to keep `current`. `lastRequestAt`: the latest request's start or end. */
  decide(
    now: number,
    current: number,
    lastRequestAt: number | undefined,
    inflight: number,
  ): Decision | undefined {
    const { min, max, target, windowMs, cooldownMs, idleMs } = this.s;
    if (current === 0) return undefined; // a request wakes it (the router's cold start)
    const idleFor = now - (lastRequestAt ?? this.firstAt ?? now);
    if (min === 0 && inflight === 0 && idleFor >= idleMs) {
      return this.changed(now, 0, `no request for ${Math.round(idleFor / 1000)} s (min_scale 0)`);
    }
    const stable = this.average(now - windowMs);
    const panic = this.average(now - Math.max(1, windowMs * PANIC_SHARE));
    const full = this.firstAt !== undefined && now - this.firstAt >= windowMs;
    const floor = Math.max(min, 1);
    const want = (avg: number) => Math.min(max, Math.max(floor, Math.ceil(avg / target)));
    if (panic / current >= PANIC_FACTOR * target && want(panic) > current) {
      return this.changed(
        now,
        want(panic),
        `panic: ${round1(panic / current)} requests in flight per process over the last ${Math.round((windowMs * PANIC_SHARE) / 100) / 10} s (target ${target})`,
      );
    }
    if (full && stable / current > target && want(stable) > current) {
      return this.changed(
        now,
        want(stable),
        `average ${round1(stable / current)} requests in flight per process over ${windowMs / 1000} s is above the target of ${target}`,
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
      `average ${round1(stable)} requests in flight over ${windowMs / 1000} s needs ${wanted} (target ${target} per process) for ${Math.round((now - this.lowSince) / 1000)} s`,
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
    return inWindow.reduce((sum, x) => sum + x.concurrency, 0) / inWindow.length;
  }
}
