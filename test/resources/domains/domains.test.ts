import assert from "node:assert/strict";
import { before, it } from "node:test";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { call, createDocker, type Deployment, locs } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

interface Domain {
  id: string;
  hostname: string;
  verification: { status: string; record_name: string; token: string; reason: string | null };
  certificate: { status: string; expires_at: string | null; reason: string | null };
}

const base = (d: { id: string }) => `/v2/deployments/${d.id}/domains`;

forEachDatabase(
  "custom domains API",
  (suite) => {
    let d: Deployment;
    let other: Deployment;
    let foreign: Deployment;
    let foreignDomain: Domain;
    let first: { status: number; body: Domain };

    before(async () => {
      const ctx = suite.ctx;
      d = await createDocker(ctx);
      other = await createDocker(ctx);
      foreign = await createDocker(ctx, {}, { key: ctx.other.admin });
      first = await call<Domain>(ctx, "POST", base(d), { hostname: "WWW.Example.COM." });
      foreignDomain = (
        await call<Domain>(
          ctx,
          "POST",
          base(foreign),
          { hostname: "shop.globex.test" },
          { key: ctx.other.admin },
        )
      ).body;
    });

    it("adds a domain: pending, with its TXT record name and token, and no certificate", () => {
      assert.equal(first.status, 201, JSON.stringify(first.body));
      const { id, token } = { id: first.body.id, token: first.body.verification.token };
      assert.match(id, /^[0-9a-f-]{36}$/);
      assert.match(token, /^[0-9a-f]{40}$/);
      assert.deepEqual(first.body, {
        id,
        hostname: "www.example.com",
        verification: { status: "pending", record_name: "_slipway.www.example.com", token, reason: null },
        certificate: { status: "none", expires_at: null, reason: null },
      });
    });

    it("lists a deployment's domains, not another's", async () => {
      const ctx = suite.ctx;
      const list = await call<Domain[]>(ctx, "GET", base(d), undefined, { key: ctx.keys.viewer });
      assert.equal(list.status, 200);
      assert.deepEqual(list.body, [first.body]);
      const none = await call<Domain[]>(ctx, "GET", base(other));
      assert.deepEqual(none.body, []);
    });

    it("bad hostnames → 422 naming body.hostname, and nothing is added", async () => {
      const ctx = suite.ctx;
      const bad = [
        "192.0.2.1",
        "::1",
        "[2001:db8::1]",
        "*.example.com",
        "a*.example.com",
        `${"a".repeat(60)}.${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(60)}.example.com`,
        "exa_mple.com",
        "-lead.example.com",
        "trail-.example.com",
        "a..example.com",
        `${"x".repeat(64)}.example.com`,
        "localhost",
        "ünicode.example.com",
        "example.123",
        "has space.example.com",
        " ",
      ];
      for (const hostname of bad) {
        const res = await call(ctx, "POST", base(other), { hostname });
        assert.deepEqual(locs(res), ["body.hostname"], hostname);
      }
      assert.deepEqual(locs(await call(ctx, "POST", base(other), {})), ["body.hostname"]);
      assert.deepEqual(locs(await call(ctx, "POST", base(other), { hostname: 7 })), ["body.hostname"]);
      assert.deepEqual((await call<Domain[]>(ctx, "GET", base(other))).body, []);
    });

    it("a hostname under the apps domain → 409 (it would take another deployment's host)", async () => {
      const ctx = suite.ctx;
      for (const hostname of ["apps.test", "other-app.apps.test", "a.b.APPS.test"]) {
        const res = await call<{ detail: string }>(ctx, "POST", base(other), { hostname });
        assert.equal(res.status, 409, hostname);
        assert.match(res.body.detail, /apps domain/);
      }
    });

    it("a hostname claimed twice → 409: same deployment, another deployment, another workspace or organization", async () => {
      const ctx = suite.ctx;
      const again = await call<{ detail: string }>(ctx, "POST", base(d), { hostname: "www.example.com" });
      assert.equal(again.status, 409);
      assert.match(again.body.detail, /already a domain of this deployment/);
      const elsewhere = await call<{ detail: string }>(ctx, "POST", base(other), {
        hostname: "www.example.com",
      });
      assert.equal(elsewhere.status, 409);
      assert.match(elsewhere.body.detail, /another deployment of this workspace/);
      const otherOrg = await call<{ detail: string }>(ctx, "POST", base(d), { hostname: "shop.globex.test" });
      assert.equal(otherOrg.status, 409);
      assert.match(otherOrg.body.detail, /another workspace/);
      // The organization's second workspace is another workspace too.
      const headers = { "x-tenant-id": ctx.workspace2Id };
      const ws2 = await createDocker(ctx, {}, { key: ctx.keys.admin, headers });
      const inWs2 = await call<{ detail: string }>(
        ctx,
        "POST",
        base(ws2),
        { hostname: "www.example.com" },
        { key: ctx.keys.admin, headers },
      );
      assert.equal(inWs2.status, 409);
      assert.match(inWs2.body.detail, /another workspace/);
    });

    it("unknown deployment or domain → 404", async () => {
      const ctx = suite.ctx;
      const nobody = { id: "00000000-0000-4000-8000-000000000000" };
      assert.equal((await call(ctx, "GET", base(nobody))).status, 404);
      assert.equal((await call(ctx, "POST", base(nobody), { hostname: "x.example.com" })).status, 404);
      assert.equal((await call(ctx, "DELETE", `${base(d)}/${nobody.id}`)).status, 404);
      // A domain of one deployment is not found under another.
      assert.equal((await call(ctx, "DELETE", `${base(other)}/${first.body.id}`)).status, 404);
      assert.equal((await call(ctx, "GET", `${base(d)}`)).body.length, 1);
    });

    it("removes a domain; its hostname can be claimed again", async () => {
      const ctx = suite.ctx;
      const added = await call<Domain>(ctx, "POST", base(other), { hostname: "gone.example.com" });
      assert.equal(added.status, 201);
      const removed = await call<Domain>(ctx, "DELETE", `${base(other)}/${added.body.id}`);
      assert.equal(removed.status, 200);
      assert.deepEqual(removed.body, added.body);
      assert.deepEqual((await call<Domain[]>(ctx, "GET", base(other))).body, []);
      assert.equal((await call(ctx, "DELETE", `${base(other)}/${added.body.id}`)).status, 404);
      assert.equal((await call(ctx, "POST", base(d), { hostname: "gone.example.com" })).status, 201);
    });

    it("deleting the deployment deletes its domains: the hostname is free again", async () => {
      const ctx = suite.ctx;
      const doomed = await createDocker(ctx);
      assert.equal((await call(ctx, "POST", base(doomed), { hostname: "doomed.example.com" })).status, 201);
      const del = await call(ctx, "DELETE", `/v2/deployments/${doomed.id}`);
      assert.ok([200, 202, 204].includes(del.status), JSON.stringify(del.body));
      // external_docker deployments are removed at once (no runtime holds them).
      assert.equal((await call(ctx, "POST", base(other), { hostname: "doomed.example.com" })).status, 201);
    });

    authMatrix(suite, {
      method: "GET",
      url: () => base(d),
      workspace: true,
      otherTenantUrl: () => base(foreign),
    });
    authMatrix(suite, {
      method: "POST",
      url: () => base(d),
      payload: () => ({ hostname: `matrix-${Date.now()}.example.com` }),
      workspace: true,
      otherTenantUrl: () => base(foreign),
    });
    authMatrix(suite, {
      method: "DELETE",
      url: () => `${base(d)}/${first.body.id}`,
      workspace: true,
      otherTenantUrl: () => `${base(foreign)}/${foreignDomain.id}`,
    });
  },
  { env: { SLIPWAY_APPS_DOMAIN: "apps.test" } },
);
