import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  Autoscaler,
  type AutoscaleSettings,
  CPU,
} from "../../../../src/runtimes/local/scaling/autoscaler.ts";
import { Traffic } from "../../../../src/runtimes/local/scaling/traffic.ts";

const settings: AutoscaleSettings = {
  min: 1,
  max: 5,
  target: 10,
  windowMs: 6000,
  cooldownMs: 30_000,
  idleMs: 60_000,
};

/** Feeds one sample a second from `from` to `to` (exclusive) at `concurrency`; returns the decisions. */
function run(a: Autoscaler, from: number, to: number, concurrency: number, current: () => number) {
  const out: { at: number; desired: number; reason: string }[] = [];
  for (let t = from; t < to; t += 1000) {
    a.observe(t, concurrency);
    const d = a.decide(t, current(), t, concurrency);
    if (d) out.push({ at: t, ...d });
  }
  return out;
}

describe("autoscaler (pure decisions)", () => {
  it("scales up only once the stable window's average per process stays above the target", () => {
    const a = new Autoscaler(settings);
    // 15 in flight on one process: 1.5× the target (no panic, which is 2×).
    const ups = run(a, 0, 10_000, 15, () => 1);
    assert.equal(ups.length > 0, true);
    assert.equal(ups[0]?.at, 6000, "not before the window is full");
    assert.equal(ups[0]?.desired, 2);
    assert.match(
      ups[0]?.reason ?? "",
      /average 15 requests in flight per process over 6 s is above the target of 10/,
    );
  });

  it("panics (scales up at once) at twice the target, never past max", () => {
    const a = new Autoscaler(settings);
    a.observe(0, 200);
    const d = a.decide(0, 1, 0, 200);
    assert.equal(d?.desired, 5);
    assert.match(d?.reason ?? "", /^panic: 200 requests in flight per process/);
  });

  it("scales down only after the cool-down, and not below min", () => {
    const a = new Autoscaler({ ...settings, min: 2 });
    let current = 4;
    const early = run(a, 0, 29_000, 1, () => current);
    assert.deepEqual(early, [], "nothing during the cool-down");
    const later = run(a, 29_000, 40_000, 1, () => current);
    assert.equal(later[0]?.desired, 2, "min 2 is the floor");
    assert.match(
      later[0]?.reason ?? "",
      /^1 requests in flight in all on average over 6 s needs 2 \(target 10 requests in flight per process\) for 30 s$/,
    );
    current = 2;
  });

  it("a burst in the cool-down starts it over", () => {
    const a = new Autoscaler(settings);
    const current = () => 3;
    assert.deepEqual(run(a, 0, 20_000, 5, current), []);
    // 25 in flight needs 3: the wish to go down is gone.
    assert.deepEqual(run(a, 20_000, 27_000, 25, current), []);
    assert.deepEqual(run(a, 27_000, 50_000, 5, current), [], "the cool-down counts from the burst's end");
  });

  it("min 0 goes to zero after the idle period without requests, and leaves zero to the router", () => {
    const a = new Autoscaler({ ...settings, min: 0, idleMs: 5000 });
    a.observe(0, 0);
    assert.equal(a.decide(4000, 1, 0, 0), undefined);
    assert.equal(a.decide(5000, 1, 0, 1), undefined, "a request in flight keeps it");
    const d = a.decide(5000, 1, 0, 0);
    assert.equal(d?.desired, 0);
    assert.match(d?.reason ?? "", /no request for 5 s \(min_scale 0\)/);
    assert.equal(a.decide(99_000, 0, 0, 0), undefined);
  });

  it("on cpu (queue workers): up after the window, no panic, down after the cool-down, never to zero", () => {
    const a = new Autoscaler({ ...settings, min: 1, max: 3, target: 0.7, idleMs: undefined, metric: CPU });
    let current = 1;
    // 5 cores' worth on one worker is far past twice the target: still no scale-up before the window.
    const ups = run(a, 0, 7000, 5, () => current);
    assert.equal(ups[0]?.at, 6000);
    assert.equal(ups[0]?.desired, 3, "never past max");
    assert.match(
      ups[0]?.reason ?? "",
      /^average 500% cpu per process over 6 s is above the target of 70% cpu$/,
    );
    current = 3;
    const downs = run(a, 7000, 200_000, 0, () => current);
    assert.equal(downs[0]?.desired, 1, "down to min 1, and never to zero");
    assert.match(
      downs[0]?.reason ?? "",
      /^0% cpu in all on average over 6 s needs 1 \(target 70% cpu per process\)/,
    );
    assert.ok(downs.every((d) => d.desired >= 1));
  });

  it("min 1 never goes to zero, however long it is idle", () => {
    const a = new Autoscaler(settings);
    assert.deepEqual(
      run(a, 0, 200_000, 0, () => 1).filter((d) => d.desired === 0),
      [],
    );
  });
});

describe("traffic (time-weighted concurrency)", () => {
  it("averages in-flight requests over time and remembers the last request", () => {
    let now = 1000;
    const t = new Traffic(() => now);
    assert.equal(t.lastRequestAt, undefined);
    t.begin();
    t.begin();
    now = 1500; // 2 in flight for 500 ms
    t.end();
    now = 2000; // 1 in flight for 500 ms
    assert.equal(t.takeAverage(), 1.5);
    assert.equal(t.inflight, 1);
    assert.equal(t.lastRequestAt, 1500);
    now = 3000;
    assert.equal(t.takeAverage(), 1, "a new period");
    t.end();
    t.end();
    assert.equal(t.inflight, 0, "never negative");
  });
});
