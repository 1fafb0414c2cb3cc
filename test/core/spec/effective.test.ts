import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  DEPLOYMENT_TYPE_DEFAULTS,
  planScale,
} from "../../../../src/runtimes/local/scaling/scale-defaults.ts";

const plan = (spec: Record<string, unknown>, type: "dev_free" | "dev" | "prod", max = 8) => {
  const lines: string[] = [];
  return { plan: planScale(spec, type, max, (l) => lines.push(l)), lines };
};

describe("deployment_type defaults and the scale plan", () => {
  it("dev_free: one API process, to zero when idle, 256 MB", () => {
    const { plan: p } = plan({}, "dev_free");
    assert.deepEqual(p.web, { min: 0, max: 1 });
    assert.equal(p.memoryLimitMb, 256);
    assert.deepEqual(p.queue, { min: 1, max: 1 }, "queue workers are never scaled to zero");
  });

  it("dev: one process, never to zero, no memory limit", () => {
    const { plan: p } = plan({}, "dev");
    assert.deepEqual(p.web, { min: 1, max: 1 });
    assert.equal(p.memoryLimitMb, undefined);
  });

  it("prod: at least two API processes, even when min_scale asks for fewer", () => {
    assert.deepEqual(plan({}, "prod").plan.web, { min: 2, max: 4 });
    const { plan: p, lines } = plan({ min_scale: 0 }, "prod");
    assert.equal(p.web.min, 2);
    assert.ok(lines.some((l) => l.includes("runs at least 2 API processes")));
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

  it("queue workers' memory and cpu limits: queue_*_limit, else queue_cpu, else the API processes'", () => {
    const api = plan({ memory_limit_mb: 512, cpu_limit: 1.5 }, "dev").plan;
    assert.deepEqual([api.queueMemoryLimitMb, api.cpus, api.queueCpus], [512, 1.5, 1.5]);
    const own = plan(
      { memory_limit_mb: 512, cpu: 0.5, queue_memory_limit_mb: 128, queue_cpu_limit: 0.3 },
      "dev",
    ).plan;
    assert.deepEqual(
      [own.memoryLimitMb, own.queueMemoryLimitMb, own.cpus, own.queueCpus],
      [512, 128, 0.5, 0.3],
    );
    assert.equal(plan({ queue_cpu: 0.2 }, "dev").plan.queueCpus, 0.2);
    const free = plan({}, "dev_free").plan;
    assert.equal(free.queueMemoryLimitMb, 256, "the type's default memory limit applies to both");
    assert.equal(free.queueCpus, undefined);
  });

  it("bad or excessive values are replaced, with a line saying why", () => {
    const { plan: p, lines } = plan({ min_scale: 20, max_scale: 1.5 }, "dev", 8);
    assert.equal(p.web.min, 8);
    assert.equal(p.web.max, 8);
    assert.ok(lines.some((l) => l.includes("min_scale 20 is above this machine's limit of 8")));
    assert.ok(lines.some((l) => l.includes("max_scale 1.5 is not a whole number")));
    const low = plan({ min_scale: 3, max_scale: 2 }, "dev");
    assert.deepEqual(low.plan.web, { min: 3, max: 3 });
    assert.ok(low.lines.some((l) => l.includes("max_scale 2 is below min_scale 3")));
  });

  it("every type has an entry", () => {
    assert.deepEqual(Object.keys(DEPLOYMENT_TYPE_DEFAULTS).sort(), ["dev", "dev_free", "prod"]);
  });
});
