import assert from "node:assert/strict";
import { it } from "node:test";
import { buildApp } from "../../../src/app.ts";
import { openDatabase } from "../../../src/db/client.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

const json = { "content-type": "application/json" };

forEachDatabase("api keys", (suite) => {
  authMatrix(suite, { method: "GET", url: () => "/v1/api-keys", role: "admin" });
  authMatrix(suite, {
    method: "POST",
    url: () => "/v1/api-keys",
    payload: () => ({ role: "viewer", description: "matrix" }),
    role: "admin",
  });
  authMatrix(suite, {
    method: "DELETE",
    url: () => "/v1/api-keys/00000000-0000-4000-8000-000000000000",
    role: "admin",
    otherTenantUrl: async (ctx) => {
      const res = await ctx.app.inject({
        method: "POST",
        url: "/v1/api-keys",
        headers: { ...ctx.headers(ctx.other.admin), ...json },
        payload: { role: "viewer" },
      });
      return `/v1/api-keys/${res.json().id}`;
    },
  });

  it("shows the key once, stores only a hash, and the key works with its role", async () => {
    const { app, keys, headers, db } = suite.ctx;
    const res = await app.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { ...headers(keys.admin), ...json },
      payload: { role: "viewer", description: "ci reader" },
    });
    assert.equal(res.statusCode, 201, res.body);
    const created = res.json();
    assert.match(created.key, /^sw_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.prefix, created.key.slice(0, 10));
    const list = await app.inject({ method: "GET", url: "/v1/api-keys", headers: headers(keys.admin) });
    const listed = list.json().find((k: { id: string }) => k.id === created.id);
    assert.equal(listed.description, "ci reader");
    assert.equal("key" in listed, false);
    const stored = JSON.stringify(await db.orm.execute("SELECT * FROM api_keys" as never));
    assert.ok(!stored.includes(created.key), "the key itself is not stored");
    const read = await app.inject({ method: "GET", url: "/v1/workspaces", headers: headers(created.key) });
    assert.equal(read.statusCode, 200);
    const write = await app.inject({
      method: "POST",
      url: "/v1/workspaces",
      headers: { ...headers(created.key), ...json },
      payload: { name: "x" },
    });
    assert.equal(write.statusCode, 403);
  });

  it("Authorization: Bearer works like X-Api-Key", async () => {
    const { app, keys } = suite.ctx;
    const res = await app.inject({
      method: "GET",
      url: "/v1/workspaces",
      headers: { authorization: `Bearer ${keys.viewer}` },
    });
    assert.equal(res.statusCode, 200);
  });

  it("a revoked key fails at once", async () => {
    const { app, keys, headers } = suite.ctx;
    const created = (
      await app.inject({
        method: "POST",
        url: "/v1/api-keys",
        headers: { ...headers(keys.admin), ...json },
        payload: { role: "member" },
      })
    ).json();
    assert.equal(
      (await app.inject({ method: "GET", url: "/v1/workspaces", headers: headers(created.key) })).statusCode,
      200,
    );
    const del = await app.inject({
      method: "DELETE",
      url: `/v1/api-keys/${created.id}`,
      headers: headers(keys.admin),
    });
    assert.equal(del.statusCode, 200);
    assert.match(del.json().revoked_at, /Z$/);
    const after = await app.inject({ method: "GET", url: "/v1/workspaces", headers: headers(created.key) });
    assert.equal(after.statusCode, 401);
  });

  it("workspace binding: the key acts in its workspace; keys it mints stay bound", async () => {
    const { app, keys, headers, workspace2Id, workspaceId } = suite.ctx;
    const bad = await app.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { ...headers(keys.admin), ...json },
      payload: { role: "admin", workspace_id: "00000000-0000-4000-8000-000000000000" },
    });
    assert.equal(bad.statusCode, 422);
    assert.deepEqual(bad.json().detail[0].loc, ["body", "workspace_id"]);
    const boundAdmin = (
      await app.inject({
        method: "POST",
        url: "/v1/api-keys",
        headers: { ...headers(keys.admin), ...json },
        payload: { role: "admin", workspace_id: workspace2Id },
      })
    ).json();
    assert.equal(boundAdmin.workspace_id, workspace2Id);
    const escalate = await app.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { ...headers(boundAdmin.key), ...json },
      payload: { role: "admin", workspace_id: workspaceId },
    });
    assert.equal(escalate.statusCode, 403);
    const child = await app.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { ...headers(boundAdmin.key), ...json },
      payload: { role: "viewer" },
    });
    assert.equal(child.statusCode, 201);
    assert.equal(child.json().workspace_id, workspace2Id);
    const sameTenant = await app.inject({
      method: "GET",
      url: "/v1/workspaces",
      headers: headers(boundAdmin.key, { "x-tenant-id": workspace2Id }),
    });
    assert.equal(sameTenant.statusCode, 200);
    const listed = await app.inject({ method: "GET", url: "/v1/api-keys", headers: headers(boundAdmin.key) });
    assert.ok(listed.json().every((k: { workspace_id: string }) => k.workspace_id === workspace2Id));
  });

  it("rejects an unknown role with 422", async () => {
    const { app, keys, headers } = suite.ctx;
    const res = await app.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { ...headers(keys.admin), ...json },
      payload: { role: "owner" },
    });
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json().detail[0].loc, ["body", "role"]);
  });

  it("revocation reaches another server process sharing the database", async () => {
    const ctx = suite.ctx;
    const { app, keys, headers } = ctx;
    // A second app with its own connection pool, as a second process would have.
    const db2 = ctx.dbUrl ? await openDatabase({ kind: "postgres", url: ctx.dbUrl }) : ctx.db;
    const app2 = await buildApp({ config: ctx.config, db: db2, keyring: ctx.keyring }, { logger: false });
    try {
      const created = (
        await app.inject({
          method: "POST",
          url: "/v1/api-keys",
          headers: { ...headers(keys.admin), "content-type": "application/json" },
          payload: { role: "viewer" },
        })
      ).json();
      const viaApp2 = () =>
        app2.inject({ method: "GET", url: "/v1/workspaces", headers: headers(created.key) });
      assert.equal((await viaApp2()).statusCode, 200, "app2 has the key cached now");
      await app.inject({ method: "DELETE", url: `/v1/api-keys/${created.id}`, headers: headers(keys.admin) });
      let status = 0;
      for (let i = 0; i < 500 && status !== 401; i++) {
        status = (await viaApp2()).statusCode;
        if (status !== 401) await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(status, 401);
    } finally {
      await app2.close();
      if (db2 !== ctx.db) await db2.close();
    }
  });
});
