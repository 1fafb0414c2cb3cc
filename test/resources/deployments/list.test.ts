import assert from "node:assert/strict";
import { before, it } from "node:test";
import { sql } from "drizzle-orm";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import {
  assertMatches,
  call,
  createDocker,
  type Deployment,
  deploymentListSchema,
  locs,
} from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

interface Page {
  resources: Deployment[];
  offset: number;
}

forEachDatabase("GET /v2/deployments", (suite) => {
  // Every deployment of this file lives in its own workspace, so the expected sets are exact.
  let ws = "";
  const all: Deployment[] = [];
  const byName = (name: string) => all.find((d) => d.name === name) as Deployment;
  const tagValue: Record<string, string> = {};

  const list = async (query = "", ctx: TestContext = suite.ctx, key?: string) => {
    const res = await call<Page>(ctx, "GET", `/v2/deployments${query}`, undefined, {
      key,
      headers: key === undefined ? { "x-tenant-id": ws } : {},
    });
    if (res.status === 200) assertMatches(deploymentListSchema, res.body);
    return res;
  };
  const names = async (query: string) => {
    const res = await list(`${query}&limit=100`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.resources.map((d) => d.name).sort();
  };

  // 25 deployments with varied attributes, statuses and tags.
  before(async () => {
    const ctx = suite.ctx;
    const created = await call<{ id: string }>(
      ctx,
      "POST",
      "/v1/workspaces",
      { name: "listing" },
      { key: ctx.keys.admin },
    );
    assert.equal(created.status, 201);
    ws = created.body.id;
    const listener = await call<{ id: string }>(
      ctx,
      "POST",
      "/v2/listeners",
      { compute_type: "k8s", compute_id: "listing", compute_config: { k8s_namespaces: ["apps"] } },
      { key: ctx.keys.admin, headers: { "x-tenant-id": ws } },
    );
    assert.equal(listener.status, 201, JSON.stringify(listener.body));
    const onListener = { listener_id: listener.body.id, listener_config: { k8s_namespace: "apps" } };
    for (let i = 0; i < 25; i++) {
      const d = await createDocker(
        ctx,
        {
          name: `${i % 2 === 0 ? "alpha" : "beta"}-${String(i).padStart(2, "0")}`,
          deployment_type: i % 5 === 0 ? "prod" : "dev",
          image_version: i % 3 === 0 ? "v2" : "v1",
          ...(i % 4 === 0 ? { source_config: onListener } : {}),
        },
        { headers: { "x-tenant-id": ws } },
      );
      all.push(d);
    }
    // Statuses are the reconciler's to set; set a few directly for the filter.
    await ctx.db.orm.execute(
      sql`UPDATE deployments SET status = 'READY' WHERE name IN ('alpha-00', 'beta-01', 'alpha-02')`,
    );
    await ctx.db.orm.execute(sql`UPDATE deployments SET status = 'UNUSED' WHERE name = 'beta-03'`);
    // Identical timestamps: the order falls back to id, and pages must still not overlap.
    await ctx.db.orm.execute(
      sql`UPDATE deployments SET created_at = '2030-01-01T00:00:00Z' WHERE name IN ('alpha-10', 'beta-11', 'alpha-12', 'beta-13')`,
    );
    const h = { headers: { "x-tenant-id": ws } };
    const mk = async (url: string, body: object) => {
      const res = await call<{ id: string }>(ctx, "POST", url, body, h);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    };
    const env = await mk("/v2/tags/keys", { key: "env" });
    const team = await mk("/v2/tags/keys", { key: "team" });
    tagValue.prod = await mk(`/v2/tags/keys/${env}/values`, { value: "prod" });
    tagValue.staging = await mk(`/v2/tags/keys/${env}/values`, { value: "staging" });
    tagValue.a = await mk(`/v2/tags/keys/${team}/values`, { value: "a" });
    const tag = (name: string, value: string) =>
      mk(`/v2/deployments/${byName(name).id}/tags`, { tag_value_id: tagValue[value] });
    await tag("alpha-00", "prod");
    await tag("alpha-00", "a");
    await tag("beta-01", "prod");
    await tag("alpha-02", "staging");
    await tag("alpha-02", "a");
    await tag("beta-03", "a");
  });

  authMatrix(suite, { method: "GET", url: () => "/v2/deployments", workspace: true });

  it("defaults: 20 newest first; offset is the next page's", async () => {
    const res = await list();
    assert.equal(res.status, 200);
    assert.equal(res.body.resources.length, 20);
    assert.equal(res.body.offset, 20);
    const rest = await list("?offset=20");
    assert.equal(rest.body.resources.length, 5);
    assert.equal(rest.body.offset, 25);
    const sorted = [...res.body.resources, ...rest.body.resources];
    for (let i = 1; i < sorted.length; i++) {
      const a = sorted[i - 1] as Deployment;
      const b = sorted[i] as Deployment;
      assert.ok(
        a.created_at > b.created_at || (a.created_at === b.created_at && a.id > b.id),
        "newest first, ties by id",
      );
    }
    assert.equal(sorted[0]?.created_at, "2030-01-01T00:00:00.000Z");
  });

  it("limit and offset at and past their bounds", async () => {
    for (const q of [
      "?limit=0",
      "?limit=101",
      "?limit=-1",
      "?limit=abc",
      "?limit=1.5",
      "?limit=",
      "?limit=1&limit=2",
    ]) {
      assert.deepEqual(locs(await list(q)), ["query.limit"], q);
    }
    for (const q of ["?offset=-1", "?offset=x", "?offset=0.5"]) {
      assert.deepEqual(locs(await list(q)), ["query.offset"], q);
    }
    assert.equal((await list("?limit=1")).body.resources.length, 1);
    const max = await list("?limit=100");
    assert.equal(max.body.resources.length, 25);
    assert.equal(max.body.offset, 25);
    const past = await list("?offset=1000");
    assert.deepEqual(past.body, { resources: [], offset: 1000 });
    assert.equal((await list("?offset=0&limit=5")).body.offset, 5);
    assert.equal((await list("?offset=24&limit=5")).body.offset, 25);
  });

  it("walking pages returns every deployment exactly once", async () => {
    for (const limit of [1, 7, 20]) {
      const seen: string[] = [];
      let offset = 0;
      for (;;) {
        const page = await list(`?limit=${limit}&offset=${offset}`);
        assert.equal(page.status, 200);
        if (page.body.resources.length === 0) break;
        seen.push(...page.body.resources.map((d) => d.id));
        assert.equal(page.body.offset, offset + page.body.resources.length);
        offset = page.body.offset;
      }
      assert.equal(seen.length, 25, `limit ${limit}`);
      assert.deepEqual(new Set(seen), new Set(all.map((d) => d.id)));
    }
  });

  it("name_contains: case-insensitive substring; LIKE metacharacters match themselves", async () => {
    assert.equal((await names("?name_contains=alpha")).length, 13);
    assert.deepEqual(await names("?name_contains=ETA-0"), [
      "beta-01",
      "beta-03",
      "beta-05",
      "beta-07",
      "beta-09",
    ]);
    assert.deepEqual(await names("?name_contains=%25"), []);
    assert.deepEqual(await names("?name_contains=_"), []);
    assert.deepEqual(await names("?name_contains=a-2"), [
      "alpha-20",
      "alpha-22",
      "alpha-24",
      "beta-21",
      "beta-23",
    ]);
  });

  it("name: the exact name only (no substring, case-sensitive); other workspaces' names match nothing", async () => {
    assert.deepEqual(await names("?name=beta-07"), ["beta-07"]);
    const one = await list("?name=alpha-04");
    assert.deepEqual(
      one.body.resources.map((d) => d.id),
      [byName("alpha-04").id],
    );
    assert.deepEqual(await names("?name=alpha-0"), [], "not a substring");
    assert.deepEqual(await names("?name=ALPHA-04"), [], "not case-insensitive");
    assert.deepEqual(await names("?name=alpha-%25"), []);
    assert.deepEqual(await names("?name=alpha-00&status=READY"), ["alpha-00"]);
    assert.deepEqual(await names("?name=alpha-04&status=READY"), [], "combined with the other filters");
    assert.deepEqual(await names("?name=beta-07&name_contains=alpha"), []);
    const ctx = suite.ctx;
    const elsewhere = await call<Page>(ctx, "GET", "/v2/deployments?name=beta-07");
    assert.deepEqual(elsewhere.body.resources, [], "the default workspace has no beta-07");
    assert.deepEqual(locs(await list(`?name=${"a".repeat(64)}`)), ["query.name"]);
  });

  it("status: one or a comma list; unknown → 422", async () => {
    assert.deepEqual(await names("?status=READY"), ["alpha-00", "alpha-02", "beta-01"]);
    assert.deepEqual(await names("?status=READY,UNUSED"), ["alpha-00", "alpha-02", "beta-01", "beta-03"]);
    assert.equal((await names("?status=AWAITING_DATABASE")).length, 21);
    assert.deepEqual(await names("?status=UNKNOWN"), []);
    assert.deepEqual(locs(await list("?status=ready")), ["query.status"]);
    assert.deepEqual(locs(await list("?status=READY,NOPE")), ["query.status"]);
  });

  it("remote_reconciled, image_version, deployment_type", async () => {
    assert.deepEqual(await names("?remote_reconciled=true"), [
      "alpha-00",
      "alpha-04",
      "alpha-08",
      "alpha-12",
      "alpha-16",
      "alpha-20",
      "alpha-24",
    ]);
    assert.equal((await names("?remote_reconciled=false")).length, 18);
    assert.deepEqual(locs(await list("?remote_reconciled=maybe")), ["query.remote_reconciled"]);
    assert.equal((await names("?image_version=v2")).length, 9);
    assert.deepEqual(await names("?image_version=v3"), []);
    assert.deepEqual(await names("?deployment_type=prod"), [
      "alpha-00",
      "alpha-10",
      "alpha-20",
      "beta-05",
      "beta-15",
    ]);
    assert.equal((await names("?deployment_type=dev")).length, 20);
    assert.deepEqual(await names("?deployment_type=dev_free"), []);
    assert.deepEqual(locs(await list("?deployment_type=big")), ["query.deployment_type"]);
    assert.deepEqual(await names("?deployment_type=prod&image_version=v2&remote_reconciled=true"), [
      "alpha-00",
    ]);
  });

  it("deployment_ids: comma list, any case; a malformed id → 422", async () => {
    const ids = [byName("alpha-04").id, byName("beta-07").id.toUpperCase()];
    assert.deepEqual(await names(`?deployment_ids=${ids.join(",")}`), ["alpha-04", "beta-07"]);
    assert.deepEqual(await names("?deployment_ids=6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e"), []);
    assert.deepEqual(locs(await list(`?deployment_ids=${ids[0]},nope`)), ["query.deployment_ids"]);
    assert.deepEqual(locs(await list("?deployment_ids=")), ["query.deployment_ids"]);
  });

  it("tag_value_ids: any listed value of a key, every key listed; unknown ids match nothing", async () => {
    assert.deepEqual(await names(`?tag_value_ids=${tagValue.prod}`), ["alpha-00", "beta-01"]);
    assert.deepEqual(await names(`?tag_value_ids=${tagValue.prod},${tagValue.staging}`), [
      "alpha-00",
      "alpha-02",
      "beta-01",
    ]);
    assert.deepEqual(await names(`?tag_value_ids=${tagValue.prod},${tagValue.a}`), ["alpha-00"]);
    assert.deepEqual(await names(`?tag_value_ids=${tagValue.a}&status=UNUSED`), ["beta-03"]);
    assert.deepEqual(await names(`?tag_value_ids=${tagValue.a},6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e`), []);
    assert.deepEqual(locs(await list(`?tag_value_ids=${tagValue.a},x`)), ["query.tag_value_ids"]);
  });

  it("tenancy: other workspaces and organizations see none of these", async () => {
    const ctx = suite.ctx;
    const own = await call<Page>(ctx, "GET", "/v2/deployments?limit=100");
    assert.equal(own.status, 200);
    const ids = new Set(all.map((d) => d.id));
    assert.ok(own.body.resources.every((d) => !ids.has(d.id) && d.tenant_id === ctx.workspaceId));
    const other = await list("?limit=100", ctx, ctx.other.admin);
    assert.equal(other.status, 200);
    assert.ok(other.body.resources.every((d) => !ids.has(d.id)));
    const viewer = await call<Page>(ctx, "GET", "/v2/deployments?limit=100", undefined, {
      key: ctx.keys.viewer,
      headers: { "x-tenant-id": ws },
    });
    assert.equal(viewer.status, 200, "viewers read");
    assert.equal(viewer.body.resources.length, 25);
  });
});
