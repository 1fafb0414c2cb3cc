import assert from "node:assert/strict";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import { call, createDocker } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

/**
 * A write's audit record commits with its change: when the record written inside the change's
 * transaction cannot be written, the change is rolled back too. A trigger plays
 * the failing audit insert; every service that writes in a transaction is exercised.
 */
forEachDatabase("audit records in the change's transaction", (suite) => {
  it("a write whose audit record fails changes nothing", async () => {
    const ctx = suite.ctx;
    const admin = { key: ctx.keys.admin };
    const d = await createDocker(ctx);
    const key = await call<{ id: string }>(ctx, "POST", "/v1/api-keys", { role: "viewer" }, admin);
    assert.equal(key.status, 201);
    const tagKey = await call<{ id: string }>(ctx, "POST", "/v2/tags/keys", { key: "tier" }, admin);
    assert.equal(tagKey.status, 201);

    await ctx.db.orm.execute(sql`
      CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit store unavailable';
      END $$`);
    await ctx.db.orm.execute(
      sql`CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_audit()`,
    );
    try {
      const writes: ["POST" | "DELETE", string, unknown][] = [
        ["POST", "/v1/workspaces", { name: "never-made" }],
        ["POST", "/v1/api-keys", { role: "member", description: "never-made" }],
        ["DELETE", `/v1/api-keys/${key.body.id}`, undefined],
        ["POST", "/v2/tags/keys", { key: "never-made" }],
        ["DELETE", `/v2/tags/keys/${tagKey.body.id}`, undefined],
        ["POST", "/v2/listeners", { compute_type: "k8s", compute_id: "never-made", compute_config: {} }],
        ["DELETE", `/v2/deployments/${d.id}`, undefined],
      ];
      for (const [method, url, body] of writes) {
        const res = await call(ctx, method, url, body, admin);
        assert.ok(res.status >= 500, `${method} ${url} answered ${res.status} though its record failed`);
      }

      const state = async (url: string) =>
        JSON.stringify((await call(ctx, "GET", url, undefined, admin)).body);
      assert.ok(!(await state("/v1/workspaces")).includes("never-made"));
      const keys = await state("/v1/api-keys");
      assert.ok(!keys.includes("never-made"));
      const revoked = (
        await call<{ id: string; revoked_at?: string | null }[]>(ctx, "GET", "/v1/api-keys", undefined, admin)
      ).body.find((k) => k.id === key.body.id);
      assert.ok(revoked && !revoked.revoked_at, "the key is not revoked");
      const tags = await state("/v2/tags/keys");
      assert.ok(!tags.includes("never-made") && tags.includes(tagKey.body.id));
      assert.ok(!(await state("/v2/listeners")).includes("never-made"));
      const got = await call<{ status: string }>(ctx, "GET", `/v2/deployments/${d.id}`, undefined, admin);
      assert.equal(got.status, 200);
      assert.notEqual(got.body.status, "AWAITING_DELETE");
    } finally {
      await ctx.db.orm.execute(sql`DROP TRIGGER refuse_audit ON audit_log`);
      await ctx.db.orm.execute(sql`DROP FUNCTION refuse_audit()`);
    }

    // With the audit store back, the same write lands with one complete record.
    const made = await call<{ id: string }>(ctx, "POST", "/v1/workspaces", { name: "made" }, admin);
    assert.equal(made.status, 201);
    const log = await call<{ resource_id: string | null; status_code: number | null }[]>(
      ctx,
      "GET",
      "/v1/audit-log?action=workspaces.create",
      undefined,
      admin,
    );
    const records = log.body.filter((r) => r.resource_id === made.body.id);
    assert.equal(records.length, 1);
    assert.equal(records[0]?.status_code, 201);
  });
});
