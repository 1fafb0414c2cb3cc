import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normalizedSpec, resolveResourceSpec, specOf } from "../../../src/core/spec/stored.ts";

describe("the stored spec: rounding and default limits", () => {
  it("rounds the bounded cores to 0.1 and defaults each missing limit from its request", () => {
    assert.deepEqual(normalizedSpec({ cpu: 0.26, queue_cpu: 0.3, redis_memory_mb: 64, db_cpu: 0.25 }), {
      cpu: 0.3,
      cpu_limit: 0.6,
      queue_cpu: 0.3,
      queue_cpu_limit: 0.6,
      redis_memory_mb: 64,
      redis_memory_limit_mb: 64,
      db_cpu: 0.25,
      db_cpu_limit: 0.5,
    });
  });

  it("changes nothing in a spec it made (the runtimes apply it again to what they are handed)", () => {
    const once = normalizedSpec({ cpu: 1.04, memory_mb: 100, queue_memory_mb: 30, labels: { a: "b" } });
    assert.deepEqual(normalizedSpec(once), once);
    const given = { cpu: 0.5, cpu_limit: 0.7, memory_mb: 10, memory_limit_mb: 11 };
    assert.deepEqual(normalizedSpec(given), given);
  });

  it("a PATCH's request without its limit gets the default limit again, not the old one", () => {
    const base = resolveResourceSpec({ cpu: 1 }, null);
    assert.deepEqual(base, { cpu: 1, cpu_limit: 2 });
    assert.deepEqual(resolveResourceSpec({ cpu: 2 }, base), { cpu: 2, cpu_limit: 4 });
    assert.deepEqual(resolveResourceSpec({ min_scale: 1 }, base), { cpu: 1, cpu_limit: 2, min_scale: 1 });
    assert.equal(resolveResourceSpec(null, base), base);
  });

  it("null inside a sent spec means not given", () => {
    assert.deepEqual(specOf({ cpu: null, min_scale: 2 }), { min_scale: 2 });
    assert.equal(specOf({ cpu: null }), null);
    assert.equal(specOf(undefined), null);
  });
});
