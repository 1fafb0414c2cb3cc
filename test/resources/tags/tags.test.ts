import assert from "node:assert/strict";
import { before, it } from "node:test";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { call, createDocker, type Deployment, locs } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

interface TagKey {
  id: string;
  key: string;
  created_at: string;
}
interface TagValue {
  id: string;
  tag_key_id: string;
  value: string;
  created_at: string;
}
interface Tagging {
  deployment_id: string;
  tag_value_id: string;
  tag_key_id: string;
  key: string;
  value: string;
  created_at: string;
}

forEachDatabase("tags", (suite) => {
  let d: Deployment;
  let env: TagKey;
  let prod: TagValue;
  // The other organization's key, value and deployment, for the 404s of the matrix.
  let otherKey: TagKey;
  let otherValue: TagValue;
  let otherDeployment: Deployment;

  let created: { key: number; value: number; tagged: number };

  // Keys, values and deployments in two organizations.
  before(async () => {
    const ctx = suite.ctx;
    d = await createDocker(ctx);
    const k = await call<TagKey>(ctx, "POST", "/v2/tags/keys", { key: "env" });
    env = k.body;
    const v = await call<TagValue>(ctx, "POST", `/v2/tags/keys/${env.id}/values`, { value: "prod" });
    prod = v.body;
    const admin = { key: ctx.other.admin };
    otherKey = (await call<TagKey>(ctx, "POST", "/v2/tags/keys", { key: "env" }, admin)).body;
    otherValue = (
      await call<TagValue>(ctx, "POST", `/v2/tags/keys/${otherKey.id}/values`, { value: "prod" }, admin)
    ).body;
    otherDeployment = await createDocker(ctx, {}, admin);
    const tagged = await call(
      ctx,
      "POST",
      `/v2/deployments/${otherDeployment.id}/tags`,
      { tag_value_id: otherValue.id },
      admin,
    );
    created = { key: k.status, value: v.status, tagged: tagged.status };
  });

  it("creates keys, values and tags in two organizations", () => {
    assert.equal(created.key, 201, JSON.stringify(env));
    assert.equal(env.key, "env");
    assert.equal(created.value, 201);
    assert.equal(prod.tag_key_id, env.id);
    assert.equal(created.tagged, 201);
  });

  authMatrix(suite, { method: "GET", url: () => "/v2/tags/keys", workspace: true });
  authMatrix(suite, {
    method: "POST",
    url: () => "/v2/tags/keys",
    payload: () => ({ key: "matrix" }),
    workspace: true,
  });
  authMatrix(suite, {
    method: "DELETE",
    url: () => `/v2/tags/keys/${env.id}`,
    workspace: true,
    otherTenantUrl: () => `/v2/tags/keys/${otherKey.id}`,
  });
  authMatrix(suite, {
    method: "GET",
    url: () => `/v2/tags/keys/${env.id}/values`,
    workspace: true,
    otherTenantUrl: () => `/v2/tags/keys/${otherKey.id}/values`,
  });
  authMatrix(suite, {
    method: "POST",
    url: () => `/v2/tags/keys/${env.id}/values`,
    payload: () => ({ value: "matrix" }),
    workspace: true,
    otherTenantUrl: () => `/v2/tags/keys/${otherKey.id}/values`,
  });
  authMatrix(suite, {
    method: "DELETE",
    url: () => `/v2/tags/keys/${env.id}/values/${prod.id}`,
    workspace: true,
    otherTenantUrl: () => `/v2/tags/keys/${otherKey.id}/values/${otherValue.id}`,
  });
  authMatrix(suite, {
    method: "GET",
    url: () => `/v2/deployments/${d.id}/tags`,
    workspace: true,
    otherTenantUrl: () => `/v2/deployments/${otherDeployment.id}/tags`,
  });
  authMatrix(suite, {
    method: "POST",
    url: () => `/v2/deployments/${d.id}/tags`,
    payload: () => ({ tag_value_id: prod.id }),
    workspace: true,
    otherTenantUrl: () => `/v2/deployments/${otherDeployment.id}/tags`,
  });
  authMatrix(suite, {
    method: "DELETE",
    url: () => `/v2/deployments/${d.id}/tags/${prod.id}`,
    workspace: true,
    otherTenantUrl: () => `/v2/deployments/${otherDeployment.id}/tags/${otherValue.id}`,
  });

  it("keys: list, 409 on a duplicate, 422 on a bad key, per workspace", async () => {
    const ctx = suite.ctx;
    assert.equal((await call(ctx, "POST", "/v2/tags/keys", { key: "env" })).status, 409);
    for (const key of ["", " padded", "x".repeat(101)]) {
      const where = new Set(locs(await call(ctx, "POST", "/v2/tags/keys", { key })));
      assert.deepEqual([...where], ["body.key"], JSON.stringify(key));
    }
    assert.deepEqual(locs(await call(ctx, "POST", "/v2/tags/keys", {})), ["body.key"]);
    await call(ctx, "POST", "/v2/tags/keys", { key: "team" });
    const listed = await call<TagKey[]>(ctx, "GET", "/v2/tags/keys");
    assert.deepEqual(
      listed.body.map((k) => k.key),
      ["env", "team"],
    );
    const ws2 = await call<TagKey>(
      ctx,
      "POST",
      "/v2/tags/keys",
      { key: "env" },
      { key: ctx.keys.boundMember },
    );
    assert.equal(ws2.status, 201, "another workspace has its own keys");
    const ws2List = await call<TagKey[]>(ctx, "GET", "/v2/tags/keys", undefined, {
      key: ctx.keys.boundMember,
    });
    assert.deepEqual(
      ws2List.body.map((k) => k.id),
      [ws2.body.id],
    );
    assert.equal((await call(ctx, "GET", `/v2/tags/keys/${ws2.body.id}/values`)).status, 404);
    assert.equal((await call(ctx, "DELETE", `/v2/tags/keys/${ws2.body.id}`)).status, 404);
  });

  it("values: list, 409 on a duplicate, 404 for an unknown key", async () => {
    const ctx = suite.ctx;
    assert.equal((await call(ctx, "POST", `/v2/tags/keys/${env.id}/values`, { value: "prod" })).status, 409);
    const staging = await call<TagValue>(ctx, "POST", `/v2/tags/keys/${env.id}/values`, { value: "staging" });
    assert.equal(staging.status, 201);
    const listed = await call<TagValue[]>(ctx, "GET", `/v2/tags/keys/${env.id}/values`);
    assert.deepEqual(
      listed.body.map((v) => v.value),
      ["prod", "staging"],
    );
    const unknown = "6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e";
    assert.equal((await call(ctx, "GET", `/v2/tags/keys/${unknown}/values`)).status, 404);
    assert.equal((await call(ctx, "POST", `/v2/tags/keys/${unknown}/values`, { value: "x" })).status, 404);
    assert.equal((await call(ctx, "DELETE", `/v2/tags/keys/${env.id}/values/${unknown}`)).status, 404);
    assert.deepEqual(locs(await call(ctx, "POST", `/v2/tags/keys/${env.id}/values`, { value: 3 })), [
      "body.value",
    ]);
  });

  it("taggings: add, list, 409 twice, 422 for a value of no key of this workspace, remove", async () => {
    const ctx = suite.ctx;
    const added = await call<Tagging>(ctx, "POST", `/v2/deployments/${d.id}/tags`, { tag_value_id: prod.id });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.deepEqual(
      { ...added.body, created_at: "" },
      {
        deployment_id: d.id,
        tag_value_id: prod.id,
        tag_key_id: env.id,
        key: "env",
        value: "prod",
        created_at: "",
      },
    );
    assert.equal(
      (await call(ctx, "POST", `/v2/deployments/${d.id}/tags`, { tag_value_id: prod.id })).status,
      409,
    );
    for (const id of [otherValue.id, "6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e"]) {
      assert.deepEqual(locs(await call(ctx, "POST", `/v2/deployments/${d.id}/tags`, { tag_value_id: id })), [
        "body.tag_value_id",
      ]);
    }
    assert.deepEqual(locs(await call(ctx, "POST", `/v2/deployments/${d.id}/tags`, { tag_value_id: "x" })), [
      "body.tag_value_id",
    ]);
    const listed = await call<Tagging[]>(ctx, "GET", `/v2/deployments/${d.id}/tags`);
    assert.deepEqual(
      listed.body.map((t) => `${t.key}:${t.value}`),
      ["env:prod"],
    );
    const viewer = await call<Tagging[]>(ctx, "GET", `/v2/deployments/${d.id}/tags`, undefined, {
      key: ctx.keys.viewer,
    });
    assert.equal(viewer.status, 200);
    const removed = await call<Tagging>(ctx, "DELETE", `/v2/deployments/${d.id}/tags/${prod.id}`);
    assert.equal(removed.status, 200);
    assert.equal(removed.body.tag_value_id, prod.id);
    assert.equal((await call(ctx, "DELETE", `/v2/deployments/${d.id}/tags/${prod.id}`)).status, 404);
    assert.deepEqual((await call<Tagging[]>(ctx, "GET", `/v2/deployments/${d.id}/tags`)).body, []);
    const missing = "6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e";
    assert.equal((await call(ctx, "GET", `/v2/deployments/${missing}/tags`)).status, 404);
    assert.equal(
      (await call(ctx, "POST", `/v2/deployments/${missing}/tags`, { tag_value_id: prod.id })).status,
      404,
    );
  });

  it("deleting a value or a key removes its taggings; the list filter follows", async () => {
    const ctx = suite.ctx;
    const key = await call<TagKey>(ctx, "POST", "/v2/tags/keys", { key: "tier" });
    const gold = await call<TagValue>(ctx, "POST", `/v2/tags/keys/${key.body.id}/values`, { value: "gold" });
    const silver = await call<TagValue>(ctx, "POST", `/v2/tags/keys/${key.body.id}/values`, {
      value: "silver",
    });
    await call(ctx, "POST", `/v2/deployments/${d.id}/tags`, { tag_value_id: gold.body.id });
    await call(ctx, "POST", `/v2/deployments/${d.id}/tags`, { tag_value_id: silver.body.id });
    const filtered = await call<{ resources: Deployment[] }>(
      ctx,
      "GET",
      `/v2/deployments?tag_value_ids=${gold.body.id}`,
    );
    assert.deepEqual(
      filtered.body.resources.map((x) => x.id),
      [d.id],
    );
    const delValue = await call<TagValue>(
      ctx,
      "DELETE",
      `/v2/tags/keys/${key.body.id}/values/${gold.body.id}`,
    );
    assert.equal(delValue.status, 200);
    assert.equal(delValue.body.value, "gold");
    assert.deepEqual(
      (await call<Tagging[]>(ctx, "GET", `/v2/deployments/${d.id}/tags`)).body.map((t) => t.value),
      ["silver"],
    );
    const delKey = await call<TagKey>(ctx, "DELETE", `/v2/tags/keys/${key.body.id}`);
    assert.equal(delKey.status, 200);
    assert.equal(delKey.body.key, "tier");
    assert.deepEqual((await call<Tagging[]>(ctx, "GET", `/v2/deployments/${d.id}/tags`)).body, []);
    assert.equal((await call(ctx, "DELETE", `/v2/tags/keys/${key.body.id}`)).status, 404);
  });
});
