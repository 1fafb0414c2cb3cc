import assert from "node:assert/strict";
import { it } from "node:test";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

const json = { "content-type": "application/json" };

forEachDatabase("workspaces", (suite) => {
  authMatrix(suite, { method: "GET", url: () => "/v1/workspaces" });
  authMatrix(suite, {
    method: "POST",
    url: () => "/v1/workspaces",
    payload: () => ({ name: `ws-${Math.random().toString(36).slice(2)}` }),
    role: "admin",
  });

  it("admin creates a workspace; the name is unique per organization", async () => {
    const { app, keys, headers, orgId } = suite.ctx;
    const res = await app.inject({
      method: "POST",
      url: "/v1/workspaces",
      headers: { ...headers(keys.admin), ...json },
      payload: { name: "staging" },
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().organization_id, orgId);
    const dup = await app.inject({
      method: "POST",
      url: "/v1/workspaces",
      headers: { ...headers(keys.admin), ...json },
      payload: { name: "staging" },
    });
    assert.equal(dup.statusCode, 409);
    // Another organization may use the same name.
    const other = await app.inject({
      method: "POST",
      url: "/v1/workspaces",
      headers: { ...headers(suite.ctx.other.admin), ...json },
      payload: { name: "staging" },
    });
    assert.equal(other.statusCode, 201);
  });

  it("lists only the caller's organization, and a bound key only its workspace", async () => {
    const { app, keys, headers, workspace2Id, other } = suite.ctx;
    const list = await app.inject({ method: "GET", url: "/v1/workspaces", headers: headers(keys.viewer) });
    const ids = list.json().map((w: { id: string }) => w.id);
    assert.ok(ids.includes(workspace2Id));
    assert.ok(!ids.includes(other.workspaceId));
    const bound = await app.inject({
      method: "GET",
      url: "/v1/workspaces",
      headers: headers(keys.boundMember),
    });
    assert.deepEqual(
      bound.json().map((w: { id: string }) => w.id),
      [workspace2Id],
    );
  });
});
