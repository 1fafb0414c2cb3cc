import assert from "node:assert/strict";
import { before, it } from "node:test";
import { sql } from "drizzle-orm";
import {
  assertMatches,
  call,
  createDocker,
  type Deployment,
  deploymentListSchema,
  locs,
  type Revision,
} from "../../helpers/deployments.ts";
import { eventually } from "../../helpers/eventually.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

interface Page {
  resources: Deployment[];
  offset: number;
}

forEachDatabase("latest_revision_status: the latest revision's state on the deployment", (suite) => {
  // A workspace of this file's own, so the filter's expected sets are exact.
  let ws = "";
  const h = () => ({ headers: { "x-tenant-id": ws } });
  const get = async (id: string) => {
    const res = await call<Deployment>(suite.ctx, "GET", `/v2/deployments/${id}`, undefined, h());
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  /** Moves a revision as the reconciler's writes do: the trigger of migration 0024 must follow. */
  const moveRevision = (id: string, status: string) =>
    suite.ctx.db.orm.execute(sql`UPDATE revisions SET status = ${status} WHERE id = ${id}`);
  const names = async (query: string) => {
    const res = await call<Page>(suite.ctx, "GET", `/v2/deployments?limit=100&${query}`, undefined, h());
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assertMatches(deploymentListSchema, res.body);
    return res.body.resources.map((d) => d.name).sort();
  };

  before(async () => {
    const ctx = suite.ctx;
    const created = await call<{ id: string }>(
      ctx,
      "POST",
      "/v1/workspaces",
      { name: "latest-state" },
      { key: ctx.keys.admin },
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ws = created.body.id;
  });

  it("a new revision is QUEUED on the record; each move of the latest revision shows, the deployment's status stays", async () => {
    const d = await createDocker(suite.ctx, { name: "moves" }, h());
    assert.equal(d.latest_revision_status, "QUEUED");
    const rid = d.latest_revision_id as string;
    await moveRevision(rid, "BUILDING");
    await eventually("BUILDING on the record", async () =>
      (await get(d.id)).latest_revision_status === "BUILDING" ? true : undefined,
    );
    await suite.ctx.db.orm.execute(sql`UPDATE deployments SET status = 'READY' WHERE id = ${d.id}`);
    await moveRevision(rid, "DEPLOY_FAILED");
    const failed = await eventually("DEPLOY_FAILED on the record", async () => {
      const got = await get(d.id);
      return got.latest_revision_status === "DEPLOY_FAILED" ? got : undefined;
    });
    assert.equal(failed.status, "READY", "the deployment's own status is the hosted service's and stays");
  });

  it("a PATCH points it at the new revision (QUEUED); an older revision's move does not touch it", async () => {
    const d = await createDocker(suite.ctx, { name: "patched" }, h());
    const first = d.latest_revision_id as string;
    await moveRevision(first, "DEPLOYED");
    const patched = await call<Deployment>(
      suite.ctx,
      "PATCH",
      `/v2/deployments/${d.id}`,
      { source_revision_config: { image_uri: "registry.example/app:2" } },
      h(),
    );
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.notEqual(patched.body.latest_revision_id, first);
    assert.equal(patched.body.latest_revision_status, "QUEUED");
    await moveRevision(first, "UNKNOWN");
    // A later write that the read cache hears of, so a stale answer cannot pass for a fresh one.
    await moveRevision(patched.body.latest_revision_id as string, "BUILDING");
    await eventually("the latest revision's move", async () =>
      (await get(d.id)).latest_revision_status === "BUILDING" ? true : undefined,
    );
    const revisions = await call<{ resources: Revision[] }>(
      suite.ctx,
      "GET",
      `/v2/deployments/${d.id}/revisions`,
      undefined,
      h(),
    );
    assert.deepEqual(
      revisions.body.resources.map((r) => r.number),
      [2, 1],
      "revisions are numbered by creation order",
    );
  });

  it("GET /v2/deployments?latest_revision_status= filters on it; a comma list; unknown → 422", async () => {
    const ok = await createDocker(suite.ctx, { name: "filter-ok" }, h());
    const bad = await createDocker(suite.ctx, { name: "filter-bad" }, h());
    await createDocker(suite.ctx, { name: "filter-queued" }, h());
    await moveRevision(ok.latest_revision_id as string, "DEPLOYED");
    await moveRevision(bad.latest_revision_id as string, "BUILD_FAILED");
    await eventually("the filter sees both moves", async () =>
      (await names("latest_revision_status=BUILD_FAILED")).length === 1 ? true : undefined,
    );
    assert.deepEqual(await names("latest_revision_status=BUILD_FAILED"), ["filter-bad"]);
    assert.deepEqual(await names("latest_revision_status=DEPLOYED,BUILD_FAILED&name_contains=filter"), [
      "filter-bad",
      "filter-ok",
    ]);
    assert.deepEqual(await names("latest_revision_status=QUEUED&name_contains=filter"), ["filter-queued"]);
    assert.deepEqual(await names("latest_revision_status=BUILD_FAILED&status=READY"), []);
    const wrong = await call(
      suite.ctx,
      "GET",
      "/v2/deployments?latest_revision_status=READY",
      undefined,
      h(),
    );
    assert.deepEqual(locs(wrong), ["query.latest_revision_status"]);
    const lower = await call(
      suite.ctx,
      "GET",
      "/v2/deployments?latest_revision_status=deployed",
      undefined,
      h(),
    );
    assert.deepEqual(locs(lower), ["query.latest_revision_status"]);
  });

  it("another workspace's filter sees none of these", async () => {
    const res = await call<Page>(
      suite.ctx,
      "GET",
      "/v2/deployments?latest_revision_status=BUILD_FAILED&limit=100",
    );
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.resources.filter((d) => d.name.startsWith("filter-")),
      [],
      "the default workspace holds none of them",
    );
  });
});
