import assert from "node:assert/strict";
import { it } from "node:test";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

const json = { "content-type": "application/json" };

forEachDatabase("organizations", (suite) => {
  authMatrix(suite, { method: "GET", url: () => "/v1/organizations" });
  authMatrix(suite, {
    method: "POST",
    url: () => "/v1/organizations",
    payload: () => ({ name: "matrix-org" }),
    role: "admin",
  });

  it("a system key creates an organization with a default workspace and an admin key", async () => {
    const { app, keys, headers } = suite.ctx;
    const res = await app.inject({
      method: "POST",
      url: "/v1/organizations",
      headers: { ...headers(keys.system), ...json },
      payload: { name: "initech" },
    });
    assert.equal(res.statusCode, 201, res.body);
    const org = res.json();
    assert.equal(org.name, "initech");
    assert.match(org.created_at, /Z$/);
    assert.equal(org.api_key.role, "admin");
    assert.equal(org.api_key.is_system, false);
    assert.match(org.api_key.key, /^sw_/);
    // The new key works, lands in the new organization's default workspace, and is admin there.
    const ws = await app.inject({ method: "GET", url: "/v1/workspaces", headers: headers(org.api_key.key) });
    assert.equal(ws.statusCode, 200);
    assert.deepEqual(
      ws.json().map((w: { id: string; name: string }) => [w.id, w.name]),
      [[org.default_workspace_id, "default"]],
    );
    const mine = await app.inject({
      method: "GET",
      url: "/v1/organizations",
      headers: headers(org.api_key.key),
    });
    assert.deepEqual(
      mine.json().map((o: { id: string }) => o.id),
      [org.id],
    );
    const all = await app.inject({ method: "GET", url: "/v1/organizations", headers: headers(keys.system) });
    assert.ok(all.json().length >= 3);
  });

  it("an ordinary admin cannot create organizations (403)", async () => {
    const { app, keys, headers } = suite.ctx;
    const res = await app.inject({
      method: "POST",
      url: "/v1/organizations",
      headers: { ...headers(keys.admin), ...json },
      payload: { name: "nope" },
    });
    assert.equal(res.statusCode, 403);
    assert.match(res.json().detail, /system API key/);
  });

  it("a taken name is 409 and a blank one 422", async () => {
    const { app, keys, headers } = suite.ctx;
    const dup = await app.inject({
      method: "POST",
      url: "/v1/organizations",
      headers: { ...headers(keys.system), ...json },
      payload: { name: "acme" },
    });
    assert.equal(dup.statusCode, 409);
    const blank = await app.inject({
      method: "POST",
      url: "/v1/organizations",
      headers: { ...headers(keys.system), ...json },
      payload: { name: " " },
    });
    assert.equal(blank.statusCode, 422);
    assert.deepEqual(blank.json().detail[0].loc, ["body", "name"]);
  });
});
