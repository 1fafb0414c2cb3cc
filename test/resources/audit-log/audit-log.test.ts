import assert from "node:assert/strict";
import { it } from "node:test";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { call, createDocker } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

interface Record_ {
  id: string;
  organization_id: string;
  tenant_id: string | null;
  key_id: string | null;
  key_description: string;
  method: string;
  route: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  status_code: number | null;
  request_id: string;
}

forEachDatabase("audit log", (suite) => {
  authMatrix(suite, { method: "GET", url: () => "/v1/audit-log", role: "admin" });

  it("lists a scenario's writes with the right actors; viewers and members cannot read it", async () => {
    const ctx = suite.ctx;
    const keys = await call<{ id: string; key: string }>(
      ctx,
      "POST",
      "/v1/api-keys",
      { role: "member", description: "ci robot" },
      { key: ctx.keys.admin },
    );
    assert.equal(keys.status, 201, JSON.stringify(keys.body));
    const robot = keys.body.key;
    const hook = await call<{ id: string; secret: string }>(
      ctx,
      "POST",
      "/v2/webhooks",
      { url: "https://hooks.example.com/a", events: ["listener.status_changed"] },
      { key: robot, headers: { "x-request-id": "req-audit-1" } },
    );
    assert.equal(hook.status, 201);
    const patched = await call(
      ctx,
      "PATCH",
      `/v2/webhooks/${hook.body.id}`,
      { enabled: false },
      { key: robot },
    );
    assert.equal(patched.status, 200);
    const denied = await call(ctx, "DELETE", `/v2/webhooks/${hook.body.id}`, undefined, {
      key: ctx.keys.viewer,
    });
    assert.equal(denied.status, 403);
    const d = await createDocker(ctx, {}, { key: robot });
    const bad = await call(
      ctx,
      "POST",
      "/v2/webhooks",
      { url: "ftp://x", events: ["deployment.created"] },
      { key: robot },
    );
    assert.equal(bad.status, 422);

    const log = await call<Record_[]>(ctx, "GET", `/v1/audit-log?key_id=${keys.body.id}`, undefined, {
      key: ctx.keys.admin,
    });
    assert.equal(log.status, 200);
    const seen = log.body.map((r) => `${r.action}:${r.status_code}`).reverse();
    assert.deepEqual(seen, [
      "webhooks.create:201",
      "webhooks.update:200",
      "deployments.create:201",
      "webhooks.create:422",
    ]);
    const created = log.body.find((r) => r.action === "webhooks.create" && r.status_code === 201);
    assert.equal(created?.resource_type, "webhooks");
    assert.equal(created?.resource_id, hook.body.id);
    assert.equal(created?.request_id, "req-audit-1");
    assert.equal(created?.key_description, "ci robot");
    assert.equal(created?.organization_id, ctx.orgId);
    assert.equal(created?.tenant_id, ctx.workspaceId);
    assert.equal(created?.route, "/v2/webhooks");
    assert.equal(log.body.find((r) => r.action === "deployments.create")?.resource_id, d.id);
    assert.ok(!JSON.stringify(log.body).includes(hook.body.secret), "never a secret");
    assert.ok(!JSON.stringify(log.body).includes("hooks.example.com"), "never a body");

    // The viewer's refused write is recorded too, under the viewer's key.
    const refused = await call<Record_[]>(ctx, "GET", "/v1/audit-log?action=webhooks.delete", undefined, {
      key: ctx.keys.admin,
    });
    assert.ok(refused.body.some((r) => r.status_code === 403 && r.resource_id === hook.body.id));

    // Filters and paging.
    const byResource = await call<Record_[]>(
      ctx,
      "GET",
      `/v1/audit-log?resource_id=${hook.body.id}`,
      undefined,
      {
        key: ctx.keys.admin,
      },
    );
    assert.ok(byResource.body.length >= 3 && byResource.body.every((r) => r.resource_id === hook.body.id));
    const page = await call<Record_[]>(
      ctx,
      "GET",
      `/v1/audit-log?key_id=${keys.body.id}&limit=2&offset=1`,
      undefined,
      {
        key: ctx.keys.admin,
      },
    );
    assert.deepEqual(
      page.body.map((r) => r.id),
      log.body.slice(1, 3).map((r) => r.id),
    );
    const future = await call<Record_[]>(ctx, "GET", "/v1/audit-log?since=2999-01-01T00:00:00Z", undefined, {
      key: ctx.keys.admin,
    });
    assert.deepEqual(future.body, []);
    const past = await call<Record_[]>(ctx, "GET", "/v1/audit-log?until=2000-01-01T00:00:00Z", undefined, {
      key: ctx.keys.admin,
    });
    assert.deepEqual(past.body, []);
    assert.equal(
      (await call(ctx, "GET", "/v1/audit-log?since=yesterday", undefined, { key: ctx.keys.admin })).status,
      422,
    );
    assert.equal(
      (await call(ctx, "GET", "/v1/audit-log?limit=0", undefined, { key: ctx.keys.admin })).status,
      422,
    );

    // Who may read it.
    assert.equal((await call(ctx, "GET", "/v1/audit-log", undefined, { key: ctx.keys.viewer })).status, 403);
    assert.equal((await call(ctx, "GET", "/v1/audit-log", undefined, { key: ctx.keys.member })).status, 403);
    const other = await call<Record_[]>(ctx, "GET", "/v1/audit-log", undefined, { key: ctx.other.admin });
    assert.equal(other.status, 200);
    assert.ok(
      other.body.every((r) => r.organization_id === ctx.other.orgId),
      "another organization sees only its own",
    );
    await call(
      ctx,
      "POST",
      "/v2/webhooks",
      { url: "https://hooks.example.com/b", events: ["deployment.created"] },
      {
        key: ctx.other.admin,
      },
    );
    const all = await call<Record_[]>(ctx, "GET", "/v1/audit-log?limit=500", undefined, {
      key: ctx.keys.system,
    });
    const orgs = new Set(all.body.map((r) => r.organization_id));
    assert.ok(orgs.has(ctx.orgId) && orgs.has(ctx.other.orgId), "system keys see every organization");
  });
});
