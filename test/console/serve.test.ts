import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createTestContext, type TestContext } from "../helpers/harness.ts";

describe("console serving under SLIPWAY_BASE_PATH", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext("pglite", { env: { SLIPWAY_BASE_PATH: "/sw" } });
  });
  after(() => ctx.close());

  it("/sw/console redirects to /sw/console/, which is the page with a CSP that forbids inline scripts", async () => {
    const bare = await ctx.app.inject({ method: "GET", url: "/sw/console" });
    assert.equal(bare.statusCode, 308);
    assert.equal(bare.headers.location, "/sw/console/");
    const page = await ctx.app.inject({ method: "GET", url: "/sw/console/" });
    assert.equal(page.statusCode, 200);
    const csp = String(page.headers["content-security-policy"]);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.doesNotMatch(page.body, /<script>|<script [^>]*>[^<]/, "no inline script");
    assert.match(page.body, /src="assets\/app\.js"/);
  });

  it("serves the bundle without a key, and 404s anything else under assets", async () => {
    const js = await ctx.app.inject({ method: "GET", url: "/sw/console/assets/app.js" });
    assert.equal(js.statusCode, 200);
    assert.match(String(js.headers["content-type"]), /text\/javascript/);
    const css = await ctx.app.inject({ method: "GET", url: "/sw/console/assets/app.css" });
    assert.equal(css.statusCode, 200);
    const other = await ctx.app.inject({ method: "GET", url: "/sw/console/assets/..%2Fpackage.json" });
    assert.equal(other.statusCode, 404);
    assert.equal((await ctx.app.inject({ method: "GET", url: "/console/" })).statusCode, 404);
  });
});
