import assert from "node:assert/strict";
import { it } from "node:test";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";

/** Item 16: failed authentications are limited per client address. */

const call = (
  ctx: TestContext,
  address: string,
  headers: Record<string, string> = {},
  url = "/v1/workspaces",
) => ctx.app.inject({ method: "GET", url, headers, remoteAddress: address });

forEachDatabase(
  "failed-authentication limit per client address",
  (suite) => {
    it("401s beyond the limit a minute → 429 with Retry-After, for every keyed route from that address", async () => {
      const ctx = suite.ctx;
      const address = "198.51.100.7";
      for (let i = 0; i < 5; i++) {
        const res = await call(ctx, address, { "x-api-key": `sw_wrong_${i}` });
        assert.equal(res.statusCode, 401, res.body);
      }
      const limited = await call(ctx, address, { "x-api-key": "sw_wrong_again" });
      assert.equal(limited.statusCode, 429, limited.body);
      assert.match(
        limited.json().detail,
        /Too many failed authentications from this address \(limit 5 a minute\)/,
      );
      const retry = Number(limited.headers["retry-after"]);
      assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
      // Missing keys count the same, and a limited address gets 429 before any key is looked up.
      assert.equal((await call(ctx, address)).statusCode, 429);
      assert.equal((await call(ctx, address, ctx.headers(ctx.keys.admin))).statusCode, 429);
      // Public routes are not limited.
      assert.equal((await call(ctx, address, {}, "/ok")).statusCode, 200);
    });

    it("other addresses are unaffected, and successful requests are not counted", async () => {
      const ctx = suite.ctx;
      const address = "203.0.113.9";
      for (let i = 0; i < 20; i++) {
        assert.equal((await call(ctx, address, ctx.headers(ctx.keys.viewer))).statusCode, 200);
      }
      for (let i = 0; i < 5; i++) {
        assert.equal((await call(ctx, address, { "x-api-key": "sw_nope" })).statusCode, 401);
      }
      assert.equal((await call(ctx, address, { "x-api-key": "sw_nope" })).statusCode, 429);
      assert.equal((await call(ctx, "192.0.2.44", ctx.headers(ctx.keys.viewer))).statusCode, 200);
    });

    it("X-Forwarded-For is ignored unless the peer is a trusted proxy (a client cannot pick its address)", async () => {
      const ctx = suite.ctx;
      const peer = "192.0.2.200";
      for (let i = 0; i < 5; i++) {
        const res = await call(ctx, peer, { "x-api-key": "sw_nope", "x-forwarded-for": `10.9.0.${i}` });
        assert.equal(res.statusCode, 401, res.body);
      }
      const res = await call(ctx, peer, { "x-api-key": "sw_nope", "x-forwarded-for": "10.9.0.99" });
      assert.equal(res.statusCode, 429, res.body);
    });

    it("/openapi.json documents 429 on keyed operations", async () => {
      const doc = (await suite.ctx.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
        paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
      };
      const described = doc.paths["/v1/workspaces"]?.get?.responses["429"]?.description ?? "";
      assert.match(described, /failed authentications/);
    });
  },
  { env: { SLIPWAY_AUTH_FAIL_LIMIT_PER_MINUTE: "5" } },
);

forEachDatabase(
  "failed-authentication limit behind a trusted proxy",
  (suite) => {
    it("each forwarded client counts on its own; one client's bad keys do not block the others", async () => {
      const ctx = suite.ctx;
      const proxy = "198.51.100.1";
      for (let i = 0; i < 5; i++) {
        const res = await call(ctx, proxy, { "x-api-key": "sw_nope", "x-forwarded-for": "203.0.113.50" });
        assert.equal(res.statusCode, 401, res.body);
      }
      const bad = await call(ctx, proxy, { "x-api-key": "sw_nope", "x-forwarded-for": "203.0.113.50" });
      assert.equal(bad.statusCode, 429, bad.body);
      const other = await call(ctx, proxy, {
        ...ctx.headers(ctx.keys.viewer),
        "x-forwarded-for": "203.0.113.51",
      });
      assert.equal(other.statusCode, 200, other.body);
      // A peer that is not the proxy still counts as itself, whatever it forwards.
      const direct = await call(ctx, "192.0.2.77", {
        ...ctx.headers(ctx.keys.viewer),
        "x-forwarded-for": "203.0.113.50",
      });
      assert.equal(direct.statusCode, 200, direct.body);
    });
  },
  { env: { SLIPWAY_AUTH_FAIL_LIMIT_PER_MINUTE: "5", SLIPWAY_TRUST_PROXY: "198.51.100.0/24" } },
);
