import assert from "node:assert/strict";
import { before, it } from "node:test";
import type { ProcessInfo } from "../../../src/runtimes/interface.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { call, createDocker, type Deployment } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

interface ProcessList {
  resources: Record<string, unknown>[];
}

/**
 * GET /v2/deployments/{id}/processes: auth and tenancy, and how the runtime's view is shown. Real
 * processes behind it are in test/e2e/scaling.test.ts; here a runtime view with known processes is
 * attached to the app's board, so the translation (ids, dates, order, no pid) is checked exactly.
 */
forEachDatabase("deployment processes", (suite) => {
  let d: Deployment;
  let idle: Deployment;
  let other: Deployment;
  const started = Date.parse("2026-01-02T03:04:05.000Z");
  const url = () => `/v2/deployments/${d.id}/processes`;

  before(async () => {
    const ctx = suite.ctx;
    d = await createDocker(ctx);
    idle = await createDocker(ctx);
    other = await createDocker(ctx, {}, { key: ctx.other.admin });
    const revisionId = d.latest_revision_id ?? "";
    const shown: ProcessInfo[] = [
      {
        type: "queue",
        index: 1,
        id: "q1",
        revisionId,
        state: "running",
        restarts: 0,
        startedAt: started,
        memoryBytes: 1024,
      },
      {
        type: "api",
        index: 2,
        id: "a2",
        revisionId,
        state: "starting",
        restarts: 0,
        startedAt: undefined,
        memoryBytes: undefined,
      },
      {
        type: "api",
        index: 1,
        id: "a1",
        revisionId,
        state: "restarting",
        restarts: 3,
        startedAt: started,
        memoryBytes: 2048,
      },
    ];
    ctx.processes.attach({
      processes: async (id) => (id === d.id || id === other.id ? shown.map((p) => ({ ...p })) : []),
    });
  });

  authMatrix(suite, {
    method: "GET",
    url,
    workspace: true,
    otherTenantUrl: () => `/v2/deployments/${other.id}/processes`,
  });

  it("lists API processes then queue workers, by index, without any pid; a viewer may read", async () => {
    const res = await call<ProcessList>(suite.ctx, "GET", url(), undefined, { key: suite.ctx.keys.viewer });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.resources, [
      {
        type: "api",
        index: 1,
        id: "a1",
        revision_id: d.latest_revision_id,
        state: "restarting",
        restarts: 3,
        started_at: "2026-01-02T03:04:05.000Z",
        memory_bytes: 2048,
      },
      {
        type: "api",
        index: 2,
        id: "a2",
        revision_id: d.latest_revision_id,
        state: "starting",
        restarts: 0,
        started_at: null,
        memory_bytes: null,
      },
      {
        type: "queue",
        index: 1,
        id: "q1",
        revision_id: d.latest_revision_id,
        state: "running",
        restarts: 0,
        started_at: "2026-01-02T03:04:05.000Z",
        memory_bytes: 1024,
      },
    ]);
  });

  it("a deployment with nothing running here → 200 and an empty list", async () => {
    const res = await call<ProcessList>(suite.ctx, "GET", `/v2/deployments/${idle.id}/processes`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.resources, []);
  });

  it("another workspace's deployment → 404, even when its processes run here", async () => {
    const res = await call(suite.ctx, "GET", `/v2/deployments/${other.id}/processes`, undefined, {
      key: suite.ctx.keys.admin,
    });
    assert.equal(res.status, 404);
    assert.equal(res.body.detail, "Deployment not found.");
  });

  it("an unknown id → 404; a malformed id → 422 naming it", async () => {
    const unknown = await call(suite.ctx, "GET", `/v2/deployments/${crypto.randomUUID()}/processes`);
    assert.equal(unknown.status, 404);
    const bad = await call<{ detail: { loc: string[] }[] }>(
      suite.ctx,
      "GET",
      "/v2/deployments/nope/processes",
    );
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0]?.loc, ["path", "deployment_id"]);
  });
});
