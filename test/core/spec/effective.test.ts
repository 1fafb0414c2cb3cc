import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEPLOYMENT_TYPES } from "../../../src/core/model.ts";
import { DEPLOYMENT_TYPE_DEFAULTS, effectiveSpec } from "../../../src/core/spec/effective.ts";

const plan = (spec: Record<string, unknown>, type: string | undefined, max = 8) => {
  const lines: string[] = [];
  return { plan: effectiveSpec(spec, type, { maxCount: max, log: (l) => lines.push(l) }), lines };
};

describe("the effective spec: deployment_type defaults, limits and the scale", () => {
  it("dev_free: one API process, to zero when idle, 256 MB", () => {
    const { plan: p } = plan({}, "dev_free");
    assert.deepEqual(p.web, { min: 0, max: 1 });
    assert.equal(p.memoryLimitMb, 256);
    assert.deepEqual(p.queue, { min: 1, max: 1 }, "queue workers are never scaled to zero");
  });

  it("dev: one process, never to zero, no memory limit; an unknown or missing type is dev", () => {
    const { plan: p } = plan({}, "dev");
    assert.deepEqual(p.web, { min: 1, max: 1 });
    assert.equal(p.memoryLimitMb, undefined);
    assert.deepEqual(plan({}, undefined).plan, p);
    assert.deepEqual(plan({}, "later").plan, p);
    assert.deepEqual(plan({}, "toString").plan, p, "not a key of any object");
  });

  it("prod: at least two API processes, even when min_scale asks for fewer", () => {
    assert.deepEqual(plan({}, "prod").plan.web, { min: 2, max: 4 });
    const { plan: p, lines } = plan({ min_scale: 0 }, "prod");
    assert.equal(p.web.min, 2);
    assert.ok(lines.some((l) => l.includes("deployment_type prod runs at least 2 API processes")));
  });

  it("the spec overrides the defaults; queue_* default to the API values", () => {
    const { plan: p } = plan({ min_scale: 2, max_scale: 5, memory_limit_mb: 512 }, "dev_free");
    assert.deepEqual(p.web, { min: 2, max: 5 });
    assert.deepEqual(p.queue, { min: 2, max: 5 });
    assert.equal(p.memoryLimitMb, 512);
    assert.deepEqual(plan({ min_scale: 1, queue_min_scale: 3, queue_max_scale: 4 }, "dev").plan.queue, {
      min: 3,
      max: 4,
    });
  });

  it("queue workers' memory and cpu limits: queue_*_limit, else the limit of queue_cpu, else the API processes'", () => {
    const api = plan({ memory_limit_mb: 512, cpu_limit: 1.5 }, "dev").plan;
    assert.deepEqual([api.queueMemoryLimitMb, api.cpus, api.queueCpus], [512, 1.5, 1.5]);
    const own = plan(
      { memory_limit_mb: 512, cpu: 0.5, cpu_limit: 0.5, queue_memory_limit_mb: 128, queue_cpu_limit: 0.3 },
      "dev",
    ).plan;
    assert.deepEqual(
      [own.memoryLimitMb, own.queueMemoryLimitMb, own.cpus, own.queueCpus],
      [512, 128, 0.5, 0.3],
    );
    const free = plan({}, "dev_free").plan;
    assert.equal(free.queueMemoryLimitMb, 256, "the type's default memory limit applies to both");
    assert.equal(free.queueCpus, undefined);
  });

  it("a request without its limit gets the limit the API stores (twice it; the cache's memory: equal)", () => {
    const p = plan({ cpu: 0.5, queue_cpu: 0.2, memory_mb: 100, redis_memory_mb: 64, db_cpu: 1 }, "dev").plan;
    assert.deepEqual([p.cpus, p.queueCpus, p.memoryLimitMb], [1, 0.4, 200]);
    assert.deepEqual([p.fields.cpu_limit, p.fields.redis_memory_limit_mb, p.fields.db_cpu_limit], [1, 64, 2]);
    const stored = { cpu: 0.5, cpu_limit: 0.7, memory_mb: 100, memory_limit_mb: 150 };
    assert.deepEqual([plan(stored, "dev").plan.cpus, plan(stored, "dev").plan.memoryLimitMb], [0.7, 150]);
  });

  it("the fields have every default written in, and the parts asked for are those the stored spec names", () => {
    const p = plan({ cpu: 0.5, memory_mb: 256, labels: { a: "b" }, sidecars: [{ nope: 1 }] }, "prod").plan;
    assert.deepEqual(p.fields, {
      cpu: 0.5,
      cpu_limit: 1,
      memory_mb: 256,
      memory_limit_mb: 512,
      labels: { a: "b" },
      min_scale: 2,
      max_scale: 4,
      queue_min_scale: 2,
      queue_max_scale: 4,
      queue_cpu: 0.5,
      queue_cpu_limit: 1,
      queue_memory_mb: 256,
      queue_memory_limit_mb: 512,
    });
    assert.deepEqual(
      p.asks,
      { queue: false, database: false, cache: false },
      "queue_* filled in ask for nothing",
    );
    assert.deepEqual(plan({ queue_min_scale: 1, db_storage_gi: 1, redis_cpu: 0 }, "dev").plan.asks, {
      queue: true,
      database: true,
      cache: false,
    });
  });

  it("bad or excessive values are replaced, with a line saying why; no bound without maxCount", () => {
    const { plan: p, lines } = plan({ min_scale: 20, max_scale: 1.5 }, "dev", 8);
    assert.equal(p.web.min, 8);
    assert.equal(p.web.max, 8);
    assert.ok(lines.some((l) => l.includes("min_scale 20 is above this machine's limit of 8")));
    assert.ok(lines.some((l) => l.includes("max_scale 1.5 is not a whole number")));
    const low = plan({ min_scale: 3, max_scale: 2 }, "dev");
    assert.deepEqual(low.plan.web, { min: 3, max: 3 });
    assert.ok(low.lines.some((l) => l.includes("max_scale 2 is below min_scale 3")));
    assert.deepEqual(effectiveSpec({ min_scale: 20, max_scale: 30 }, "dev").web, { min: 20, max: 30 });
  });

  it("every deployment type has an entry", () => {
    assert.deepEqual(Object.keys(DEPLOYMENT_TYPE_DEFAULTS).sort(), [...DEPLOYMENT_TYPES].sort());
  });
});
