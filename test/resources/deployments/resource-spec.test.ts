import assert from "node:assert/strict";
import { it } from "node:test";
import {
  assertMatches,
  call,
  createDocker,
  type Deployment,
  deploymentSchema,
  locs,
  uniqueName,
} from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

const SPEC = ["body", "source_config", "resource_spec"].join(".");

const create = (ctx: TestContext, spec: Record<string, unknown>) =>
  call<Deployment>(ctx, "POST", "/v2/deployments", {
    name: uniqueName("spec"),
    source: "external_docker",
    source_config: { resource_spec: spec },
    source_revision_config: { image_uri: "registry.example/app:1" },
  });

const patchSpec = (ctx: TestContext, id: string, spec: Record<string, unknown>) =>
  call<Deployment>(ctx, "PATCH", `/v2/deployments/${id}`, { source_config: { resource_spec: spec } });

forEachDatabase("resource_spec as the hosted service validates it", (suite) => {
  it("cpu of the API, queue and cache rounded to 0.1; limits default to 2× (cache memory: 1×); stored as returned", async () => {
    const ctx = suite.ctx;
    const res = await create(ctx, {
      cpu: 1.24,
      queue_cpu: 2,
      redis_cpu: 0.5,
      redis_cpu_limit: 3.33,
      memory_mb: 512,
      queue_memory_mb: 300,
      redis_memory_mb: 256,
      db_cpu: 0.25,
      db_memory_mb: 100,
      min_scale: 1,
      labels: { team: "a" },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assertMatches(deploymentSchema, res.body);
    const expected = {
      cpu: 1.2,
      cpu_limit: 2.4,
      queue_cpu: 2,
      queue_cpu_limit: 4,
      redis_cpu: 0.5,
      redis_cpu_limit: 3.3,
      memory_mb: 512,
      memory_limit_mb: 1024,
      queue_memory_mb: 300,
      queue_memory_limit_mb: 600,
      redis_memory_mb: 256,
      redis_memory_limit_mb: 256,
      db_cpu: 0.25,
      db_cpu_limit: 0.5,
      db_memory_mb: 100,
      db_memory_limit_mb: 200,
      min_scale: 1,
      labels: { team: "a" },
    };
    assert.deepEqual(res.body.source_config.resource_spec, expected);
    const read = await call<Deployment>(ctx, "GET", `/v2/deployments/${res.body.id}`);
    assert.deepEqual(read.body.source_config.resource_spec, expected, "what is stored");
  });

  it("bounds at and past each edge: 422 naming every field outside them, and nothing is created", async () => {
    const ctx = suite.ctx;
    const atEdges = await create(ctx, {
      cpu: 8,
      cpu_limit: 16,
      queue_cpu: 0.1,
      queue_cpu_limit: 0.1,
      redis_cpu: 7.96,
      redis_cpu_limit: 16,
    });
    assert.equal(atEdges.status, 201, JSON.stringify(atEdges.body));
    assert.equal(
      (atEdges.body.source_config.resource_spec as Record<string, unknown>).redis_cpu,
      8,
      "7.96 rounds to 8.0",
    );
    const defaulted = await create(ctx, { cpu: 8 });
    assert.equal(
      (defaulted.body.source_config.resource_spec as Record<string, unknown>).cpu_limit,
      16,
      "2 × the largest request fits",
    );

    const name = uniqueName("spec");
    const outside = await call(ctx, "POST", "/v2/deployments", {
      name,
      source: "external_docker",
      source_config: {
        resource_spec: {
          cpu: 0.05,
          cpu_limit: 16.5,
          queue_cpu: 8.01,
          queue_cpu_limit: 0,
          redis_cpu: -1,
          redis_cpu_limit: 17,
        },
      },
      source_revision_config: { image_uri: "registry.example/app:1" },
    });
    assert.deepEqual(
      locs(outside).sort(),
      ["cpu", "cpu_limit", "queue_cpu", "queue_cpu_limit", "redis_cpu", "redis_cpu_limit"].map(
        (f) => `${SPEC}.${f}`,
      ),
    );
    const listed = await call<{ resources: unknown[] }>(ctx, "GET", `/v2/deployments?name=${name}`);
    assert.deepEqual(listed.body.resources, []);
    for (const cpu of ["1", true, [1]]) {
      assert.deepEqual(locs(await create(ctx, { cpu })), [`${SPEC}.cpu`], `cpu ${JSON.stringify(cpu)}`);
    }
    for (const field of ["db_cpu", "orchestrator_cpu", "executor_cpu_limit"]) {
      assert.deepEqual(
        locs(await create(ctx, { [field]: "x" })),
        [`${SPEC}.${field}`],
        "every cpu is a number",
      );
    }
  });

  it("the database, orchestrator and executor cpu have no bounds and are not rounded", async () => {
    const res = await create(suite.ctx, { db_cpu: 20.25, orchestrator_cpu: 0.01, executor_cpu_limit: 64 });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.source_config.resource_spec, {
      db_cpu: 20.25,
      db_cpu_limit: 40.5,
      orchestrator_cpu: 0.01,
      executor_cpu_limit: 64,
    });
  });

  it("PATCH: rounds and defaults the same way; a request sent without its limit gets the default again", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx, {
      source_config: { resource_spec: { cpu: 1, memory_mb: 256, memory_limit_mb: 300 } },
    });
    assert.deepEqual(d.source_config.resource_spec, {
      cpu: 1,
      cpu_limit: 2,
      memory_mb: 256,
      memory_limit_mb: 300,
    });
    const a = await patchSpec(ctx, d.id, { cpu: 2.06 });
    assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.deepEqual(a.body.source_config.resource_spec, {
      cpu: 2.1,
      cpu_limit: 4.2,
      memory_mb: 256,
      memory_limit_mb: 300,
    });
    const b = await patchSpec(ctx, d.id, { memory_mb: 128, cpu_limit: 5.56 });
    assert.deepEqual(b.body.source_config.resource_spec, {
      cpu: 2.1,
      cpu_limit: 5.6,
      memory_mb: 128,
      memory_limit_mb: 256,
    });
    assert.notEqual(b.body.latest_revision_id, a.body.latest_revision_id, "each makes a revision");
    const bad = await patchSpec(ctx, d.id, { cpu: 9, queue_cpu_limit: 0.01 });
    assert.deepEqual(locs(bad).sort(), [`${SPEC}.cpu`, `${SPEC}.queue_cpu_limit`]);
    const after = await call<Deployment>(ctx, "GET", `/v2/deployments/${d.id}`);
    assert.equal(
      after.body.latest_revision_id,
      b.body.latest_revision_id,
      "a refused PATCH makes no revision",
    );
    assert.deepEqual(after.body.source_config.resource_spec, b.body.source_config.resource_spec);
  });
});
