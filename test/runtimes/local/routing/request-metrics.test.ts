import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  BUCKET_MS,
  edgeTotals,
  LATENCY_BOUNDS_MS,
  latencyHistogram,
  recordRequest,
  trafficSeries,
} from "../../../../src/runtimes/local/routing/request-metrics.ts";

// Names of their own: the counters are this process's, shared by every test in it.
let n = 0;
const fresh = () => `metrics-unit-${process.pid}-${n++}`;

describe("the apps edge's request metrics", () => {
  it("counts each minute's requests by status class, and its latency histogram", () => {
    const name = fresh();
    const t0 = 1_700_000_040_000 - (1_700_000_040_000 % BUCKET_MS);
    recordRequest(name, 0.4, 200, t0 + 1);
    recordRequest(name, 1, 204, t0 + 2); // exactly a bound counts in it
    recordRequest(name, 7, 301, t0 + 3);
    recordRequest(name, 30, 404, t0 + 4);
    recordRequest(name, 20_000, 502, t0 + 5); // over every bound
    recordRequest(name, 3, 101, t0 + BUCKET_MS + 1); // the next minute
    const [first, second] = trafficSeries(name, 2 * BUCKET_MS, t0 + BUCKET_MS + 10);
    assert.ok(first && second);
    assert.equal(first.requests, 5);
    assert.equal(first.errors, 1);
    assert.deepEqual(first.statuses, { "1xx": 0, "2xx": 2, "3xx": 1, "4xx": 1, "5xx": 1 });
    assert.deepEqual(second.statuses, { "1xx": 1, "2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0 });

    const both = latencyHistogram(name, 2 * BUCKET_MS, t0 + BUCKET_MS + 10);
    assert.deepEqual(both.bounds_ms, [...LATENCY_BOUNDS_MS]);
    assert.equal(both.counts.length, LATENCY_BOUNDS_MS.length + 1);
    const at = (ms: number) => LATENCY_BOUNDS_MS.indexOf(ms as (typeof LATENCY_BOUNDS_MS)[number]);
    assert.equal(both.counts[at(1)], 2, "0.4 ms and 1 ms are at most 1 ms");
    assert.equal(both.counts[at(5)], 1, "3 ms");
    assert.equal(both.counts[at(10)], 1, "7 ms");
    assert.equal(both.counts[at(50)], 1, "30 ms");
    assert.equal(both.counts.at(-1), 1, "20 s is over every bound");
    assert.equal(
      both.counts.reduce((a, b) => a + b, 0),
      6,
    );
    // The last minute alone.
    const last = latencyHistogram(name, BUCKET_MS, t0 + BUCKET_MS + 10);
    assert.equal(
      last.counts.reduce((a, b) => a + b, 0),
      1,
    );
  });

  it("keeps totals since start per deployment for /metrics", () => {
    const name = fresh();
    recordRequest(name, 12, 200);
    recordRequest(name, 600, 503);
    const t = edgeTotals().get(name);
    assert.ok(t);
    assert.equal(t.requests, 2);
    assert.equal(t.latencySumMs, 612);
    assert.deepEqual(t.classes, [0, 1, 0, 0, 1]);
    assert.equal(
      t.latency.reduce((a, b) => a + b, 0),
      2,
    );
    assert.equal(edgeTotals().get(fresh()), undefined);
  });
});
