import assert from "node:assert/strict";
import { before, it } from "node:test";
import { sql } from "drizzle-orm";
import { removeDeployment } from "../../../src/core/deployments/write-store.ts";
import { rows } from "../../../src/db/client.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import {
  assertMatches,
  call,
  createDocker,
  type Deployment,
  deploymentSchema,
  locs,
} from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

async function count(ctx: TestContext, table: "revisions" | "deployment_tags", deploymentId: string) {
  const [row] = await rows<{ n: number }>(
    ctx.db.orm,
    sql`SELECT count(*)::int AS n FROM ${sql.identifier(table)} WHERE deployment_id = ${deploymentId}`,
  );
  return row?.n ?? 0;
}

async function secretCount(ctx: TestContext, revisionId: string | null) {
  const [row] = await rows<{ n: number }>(
    ctx.db.orm,
    sql`SELECT count(*)::int AS n FROM revision_secrets WHERE revision_id = ${revisionId}`,
  );
  return row?.n ?? 0;
}

/** A deployment with a secret, a tag and its tracing project. */
async function fullDeployment(ctx: TestContext): Promise<{ d: Deployment; projectId: string }> {
  const d = await createDocker(ctx, { secrets: [{ name: "A", value: "1" }] });
  const key = await call<{ id: string }>(ctx, "POST", "/v2/tags/keys", { key: `k-${d.name}` });
  const value = await call<{ id: string }>(ctx, "POST", `/v2/tags/keys/${key.body.id}/values`, {
    value: "v",
  });
  const tagged = await call(ctx, "POST", `/v2/deployments/${d.id}/tags`, { tag_value_id: value.body.id });
  assert.equal(tagged.status, 201);
  const [project] = (await call<{ id: string }[]>(ctx, "GET", `/v1/tracing-projects?name=${d.name}`)).body;
  assert.ok(project);
  return { d, projectId: project.id };
}

forEachDatabase("DELETE /v2/deployments/{id} without a reconciler", (suite) => {
  let matrixTarget: Deployment;
  let other: Deployment;

  before(async () => {
    matrixTarget = await createDocker(suite.ctx);
    other = await createDocker(suite.ctx, {}, { key: suite.ctx.other.admin });
  });

  authMatrix(suite, {
    method: "DELETE",
    url: () => `/v2/deployments/${matrixTarget.id}`,
    workspace: true,
    otherTenantUrl: () => `/v2/deployments/${other.id}`,
  });

  it("answers 204 with no body and removes it at once; the tracing project stays, detached", async () => {
    const ctx = suite.ctx;
    const { d, projectId } = await fullDeployment(ctx);
    const res = await ctx.app.inject({
      method: "DELETE",
      url: `/v2/deployments/${d.id}`,
      headers: ctx.headers(ctx.keys.member),
    });
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, "", "no body");
    assert.equal((await call(ctx, "GET", `/v2/deployments/${d.id}`)).status, 404);
    const listed = await call<{ resources: Deployment[] }>(
      ctx,
      "GET",
      `/v2/deployments?deployment_ids=${d.id}`,
    );
    assert.deepEqual(listed.body.resources, []);
    assert.equal(await count(ctx, "revisions", d.id), 0);
    assert.equal(await count(ctx, "deployment_tags", d.id), 0);
    assert.equal(await secretCount(ctx, d.latest_revision_id), 0);
    const project = await call<{ deployment_id: string | null; name: string }>(
      ctx,
      "GET",
      `/v1/tracing-projects/${projectId}`,
    );
    assert.equal(project.status, 200);
    assert.equal(project.body.deployment_id, null);
    assert.equal(project.body.name, d.name);
    assert.equal((await call(ctx, "DELETE", `/v2/deployments/${d.id}`)).status, 404, "gone");
  });

  it("another workspace's or organization's deployment is a 404 and stays", async () => {
    const ctx = suite.ctx;
    const ws2 = await createDocker(ctx, {}, { key: ctx.keys.boundMember });
    assert.equal((await call(ctx, "DELETE", `/v2/deployments/${ws2.id}`)).status, 404);
    assert.equal((await call(ctx, "DELETE", `/v2/deployments/${other.id}`)).status, 404);
    const still = await call(ctx, "GET", `/v2/deployments/${ws2.id}`, undefined, {
      key: ctx.keys.boundMember,
    });
    assert.equal(still.status, 200);
    assert.equal((await call(ctx, "DELETE", "/v2/deployments/not-a-uuid")).status, 422);
  });

  it("delete_tracing_project=true deletes the tracing project instead of detaching it; others stay", async () => {
    const ctx = suite.ctx;
    const { d, projectId } = await fullDeployment(ctx);
    const kept = await fullDeployment(ctx);
    const res = await call(ctx, "DELETE", `/v2/deployments/${d.id}?delete_tracing_project=true`);
    assert.equal(res.status, 204);
    assert.equal((await call(ctx, "GET", `/v2/deployments/${d.id}`)).status, 404);
    assert.equal((await call(ctx, "GET", `/v1/tracing-projects/${projectId}`)).status, 404);
    const byName = await call<unknown[]>(ctx, "GET", `/v1/tracing-projects?name=${d.name}`);
    assert.deepEqual(byName.body, []);
    const other = await call<{ deployment_id: string | null }>(
      ctx,
      "GET",
      `/v1/tracing-projects/${kept.projectId}`,
    );
    assert.equal(other.body.deployment_id, kept.d.id, "another deployment's project is untouched");
    const explicit = await fullDeployment(ctx);
    const no = await call(ctx, "DELETE", `/v2/deployments/${explicit.d.id}?delete_tracing_project=false`);
    assert.equal(no.status, 204);
    const detached = await call<{ deployment_id: string | null }>(
      ctx,
      "GET",
      `/v1/tracing-projects/${explicit.projectId}`,
    );
    assert.equal(detached.status, 200);
    assert.equal(detached.body.deployment_id, null);
  });

  it("delete_tracing_project that is not a boolean → 422 naming it; nothing is deleted", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx);
    const res = await call(ctx, "DELETE", `/v2/deployments/${d.id}?delete_tracing_project=maybe`);
    assert.deepEqual(locs(res), ["query.delete_tracing_project"]);
    assert.equal((await call(ctx, "GET", `/v2/deployments/${d.id}`)).status, 200);
  });

  it("a viewer gets 403 and the deployment stays", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx);
    const res = await call(ctx, "DELETE", `/v2/deployments/${d.id}`, undefined, { key: ctx.keys.viewer });
    assert.equal(res.status, 403);
    assert.equal((await call(ctx, "GET", `/v2/deployments/${d.id}`)).status, 200);
  });
});

forEachDatabase(
  "DELETE /v2/deployments/{id} with a reconciler",
  (suite) => {
    it("stays AWAITING_DELETE until the reconciler removes it; writes are refused meanwhile", async () => {
      const ctx = suite.ctx;
      const { d, projectId } = await fullDeployment(ctx);
      const payloads: string[] = [];
      const stop = await ctx.db.listen("slipway_work", (p) => payloads.push(p));
      try {
        const res = await call(ctx, "DELETE", `/v2/deployments/${d.id}`);
        assert.equal(res.status, 204);
        for (let i = 0; i < 500 && !payloads.includes(d.id); i++) await new Promise((r) => setTimeout(r, 20));
        assert.ok(payloads.includes(d.id), "the reconciler is told");
      } finally {
        await stop();
      }
      const read = await call<Deployment>(ctx, "GET", `/v2/deployments/${d.id}`);
      assert.equal(read.status, 200);
      assert.equal(read.body.status, "AWAITING_DELETE");
      const filtered = await call<{ resources: Deployment[] }>(
        ctx,
        "GET",
        "/v2/deployments?status=AWAITING_DELETE",
      );
      assert.deepEqual(
        filtered.body.resources.map((x) => x.id),
        [d.id],
      );
      const again = await call(ctx, "DELETE", `/v2/deployments/${d.id}`);
      assert.equal(again.status, 204, "deleting again is accepted");
      const reread = await call<Deployment>(ctx, "GET", `/v2/deployments/${d.id}`);
      assert.deepEqual(reread.body, read.body, "and changes nothing");
      assertMatches(deploymentSchema, reread.body);
      assert.equal((await call(ctx, "PATCH", `/v2/deployments/${d.id}`, { image_version: "x" })).status, 400);
      const project = await call<{ deployment_id: string | null }>(
        ctx,
        "GET",
        `/v1/tracing-projects/${projectId}`,
      );
      assert.equal(project.body.deployment_id, null, "detached at once");
      const sameName = await call(ctx, "POST", "/v2/deployments", {
        name: d.name,
        source: "external_docker",
        source_revision_config: { image_uri: "x:1" },
      });
      assert.equal(sameName.status, 409, "the name is held until the teardown ends");

      const live = await createDocker(ctx);
      assert.equal(await removeDeployment(ctx.db.orm, live.id), false, "only a deployment being deleted");
      assert.equal((await call(ctx, "GET", `/v2/deployments/${live.id}`)).status, 200);
      assert.equal(await removeDeployment(ctx.db.orm, d.id), true);
      assert.equal(await removeDeployment(ctx.db.orm, d.id), false);
      assert.equal((await call(ctx, "GET", `/v2/deployments/${d.id}`)).status, 404);
      assert.equal(await count(ctx, "revisions", d.id), 0);
      assert.equal((await call(ctx, "GET", `/v1/tracing-projects/${projectId}`)).status, 200);
    });

    it("delete_tracing_project on a repeated DELETE removes the project detached by the first", async () => {
      const ctx = suite.ctx;
      const { d, projectId } = await fullDeployment(ctx);
      assert.equal((await call(ctx, "DELETE", `/v2/deployments/${d.id}`)).status, 204);
      const detached = await call<{ deployment_id: string | null }>(
        ctx,
        "GET",
        `/v1/tracing-projects/${projectId}`,
      );
      assert.equal(detached.body.deployment_id, null);
      const again = await call(ctx, "DELETE", `/v2/deployments/${d.id}?delete_tracing_project=true`);
      assert.equal(again.status, 204);
      assert.equal((await call(ctx, "GET", `/v1/tracing-projects/${projectId}`)).status, 404);
      const read = await call<Deployment>(ctx, "GET", `/v2/deployments/${d.id}`);
      assert.equal(read.body.status, "AWAITING_DELETE", "the teardown is still the reconciler's");
    });
  },
  { env: { SLIPWAY_RECONCILER: "true" } },
);
