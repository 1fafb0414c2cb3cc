import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { before, it } from "node:test";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { call, createDocker, type Deployment, locs } from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

interface Result {
  deployment_id: string;
  status: number;
  detail?: string;
}
interface Body {
  results: Result[];
  detail?: string;
}

const bulk = (ctx: TestContext, query: string, key = ctx.keys.member) =>
  call<Body>(ctx, "DELETE", `/v2/deployments?${query}`, undefined, { key });

async function exists(ctx: TestContext, id: string, key = ctx.keys.member): Promise<boolean> {
  const res = await call(ctx, "GET", `/v2/deployments/${id}`, undefined, { key });
  return res.status === 200;
}

forEachDatabase("DELETE /v2/deployments?deployment_ids=… without a reconciler", (suite) => {
  let matrixTarget: Deployment;
  let other: Deployment;

  before(async () => {
    matrixTarget = await createDocker(suite.ctx);
    other = await createDocker(suite.ctx, {}, { key: suite.ctx.other.admin });
  });

  authMatrix(suite, {
    method: "DELETE",
    url: () => `/v2/deployments?deployment_ids=${matrixTarget.id}`,
    workspace: true,
    otherTenantUrl: () => `/v2/deployments?deployment_ids=${other.id}`,
  });

  it("all found → 200, each id 204; repeated keys and comma lists both count", async () => {
    const ctx = suite.ctx;
    const [a, b, c] = [await createDocker(ctx), await createDocker(ctx), await createDocker(ctx)];
    const res = await bulk(ctx, `deployment_ids=${a.id},${b.id}&deployment_ids=${c.id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, {
      results: [a, b, c].map((d) => ({ deployment_id: d.id, status: 204 })),
    });
    for (const d of [a, b, c]) assert.equal(await exists(ctx, d.id), false);
    const project = await call<{ deployment_id: string | null }[]>(
      ctx,
      "GET",
      `/v1/tracing-projects?name=${a.name}`,
    );
    assert.equal(project.body[0]?.deployment_id, null, "tracing projects are kept, detached");
  });

  it("some missing → 207 listing each id's result; another tenant's id counts as missing and stays", async () => {
    const ctx = suite.ctx;
    const mine = await createDocker(ctx);
    const ws2 = await createDocker(ctx, {}, { key: ctx.keys.boundMember });
    const unknown = randomUUID();
    const res = await bulk(ctx, `deployment_ids=${unknown},${mine.id},${other.id},${ws2.id}`);
    assert.equal(res.status, 207, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.results.map((r) => [r.deployment_id, r.status]),
      [
        [unknown, 404],
        [mine.id, 204],
        [other.id, 404],
        [ws2.id, 404],
      ],
    );
    for (const r of res.body.results.filter((x) => x.status === 404)) {
      assert.equal(typeof r.detail, "string", "a failed id says why");
    }
    assert.equal(await exists(ctx, mine.id), false);
    assert.equal(await exists(ctx, other.id, ctx.other.admin), true, "another organization's stays");
    assert.equal(await exists(ctx, ws2.id, ctx.keys.boundMember), true, "another workspace's stays");
  });

  it("none found → 404 with a detail and each id's result", async () => {
    const ctx = suite.ctx;
    const ids = [randomUUID(), randomUUID()];
    const res = await bulk(ctx, `deployment_ids=${ids.join(",")}`);
    assert.equal(res.status, 404);
    assert.equal(typeof res.body.detail, "string");
    assert.deepEqual(
      res.body.results.map((r) => [r.deployment_id, r.status]),
      ids.map((id) => [id, 404]),
    );
  });

  it("duplicates and upper-case ids are one id; delete_tracing_project deletes the projects", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx);
    const res = await bulk(
      ctx,
      `deployment_ids=${d.id}&deployment_ids=${d.id.toUpperCase()}&delete_tracing_project=true`,
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.results, [{ deployment_id: d.id, status: 204 }]);
    const projects = await call<unknown[]>(ctx, "GET", `/v1/tracing-projects?name=${d.name}`);
    assert.deepEqual(projects.body, []);
  });

  it("bad input → 422 naming the parameter and the bad id; nothing is deleted", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx);
    const notUuid = await bulk(ctx, `deployment_ids=${d.id},not-a-uuid`);
    assert.deepEqual(locs(notUuid), ["query.deployment_ids"]);
    assert.match(JSON.stringify(notUuid.body), /not-a-uuid/);
    assert.deepEqual(locs(await bulk(ctx, "")), ["query.deployment_ids"], "missing");
    assert.deepEqual(locs(await bulk(ctx, "deployment_ids=")), ["query.deployment_ids"], "empty");
    assert.deepEqual(locs(await bulk(ctx, `deployment_ids=${d.id},`)), ["query.deployment_ids"]);
    const many = Array.from({ length: 101 }, () => randomUUID());
    assert.deepEqual(locs(await bulk(ctx, `deployment_ids=${[d.id, ...many.slice(1)].join(",")}`)), [
      "query.deployment_ids",
    ]);
    assert.deepEqual(locs(await bulk(ctx, `deployment_ids=${d.id}&delete_tracing_project=perhaps`)), [
      "query.delete_tracing_project",
    ]);
    assert.equal(await exists(ctx, d.id), true);
    const hundred = Array.from({ length: 99 }, () => randomUUID());
    const atLimit = await bulk(ctx, `deployment_ids=${[d.id, ...hundred].join(",")}`);
    assert.equal(atLimit.status, 207, "100 ids are accepted");
    assert.equal(atLimit.body.results.length, 100);
    assert.equal(await exists(ctx, d.id), false);
  });

  it("a viewer gets 403 and nothing is deleted", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx);
    const res = await bulk(ctx, `deployment_ids=${d.id}`, ctx.keys.viewer);
    assert.equal(res.status, 403);
    assert.equal(await exists(ctx, d.id), true);
  });
});

forEachDatabase(
  "DELETE /v2/deployments?deployment_ids=… with a reconciler",
  (suite) => {
    it("each deleted deployment shows AWAITING_DELETE and the reconciler is told of each", async () => {
      const ctx = suite.ctx;
      const a = await createDocker(ctx);
      const b = await createDocker(ctx);
      const payloads: string[] = [];
      const stop = await ctx.db.listen("slipway_work", (p) => payloads.push(p));
      try {
        const res = await bulk(ctx, `deployment_ids=${a.id},${b.id}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        for (let i = 0; i < 500 && !(payloads.includes(a.id) && payloads.includes(b.id)); i++) {
          await new Promise((r) => setTimeout(r, 20));
        }
        assert.ok(payloads.includes(a.id) && payloads.includes(b.id), "the reconciler is told");
      } finally {
        await stop();
      }
      for (const d of [a, b]) {
        const read = await call<Deployment>(ctx, "GET", `/v2/deployments/${d.id}`);
        assert.equal(read.body.status, "AWAITING_DELETE");
      }
      const again = await bulk(ctx, `deployment_ids=${a.id}`);
      assert.equal(again.status, 200, "deleting again while the teardown runs is accepted");
    });
  },
  { env: { SLIPWAY_RECONCILER: "true" } },
);
