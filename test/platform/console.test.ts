import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createTestContext, type TestContext } from "../helpers/harness.ts";

describe("console serving under SLIPWAY_BASE_PATH", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext("pglite", {
      env: { SLIPWAY_BASE_PATH: "/sw", SLIPWAY_PUBLIC_URL: "https://slipway.example" },
    });
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
    // What OAuth callback URLs are made of, for the provider form.
    assert.match(page.body, /<meta name="slipway-public-base" content="https:\/\/slipway\.example\/sw">/);
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

  const ORG = "5b0e6a52-8a1f-4f43-9d55-0d1e5c7d2a10";
  const DEP = "0d9c1f7e-3b2a-4c5d-8e6f-7a8b9c0d1e2f";

  it("redirects the hosted service's console links (with and without /host) to the deployment's page, without a key", async () => {
    for (const url of [`/sw/o/${ORG}/host/deployments/${DEP}`, `/sw/o/${ORG}/deployments/${DEP}`]) {
      const res = await ctx.app.inject({ method: "GET", url });
      assert.equal(res.statusCode, 302, url);
      assert.equal(res.headers.location, `/sw/console/#/deployments/${DEP}`);
    }
    // An id in capitals names the same deployment; the console's routes use the lower-case form.
    const upper = await ctx.app.inject({
      method: "GET",
      url: `/sw/o/${ORG.toUpperCase()}/host/deployments/${DEP.toUpperCase()}`,
    });
    assert.equal(upper.headers.location, `/sw/console/#/deployments/${DEP}`);
  });

  it("answers 404 and no Location for ids that are not uuids, and outside the base path", async () => {
    for (const url of [
      `/sw/o/${ORG}/host/deployments/not-a-uuid`,
      `/sw/o/acme/host/deployments/${DEP}`,
      `/sw/o/${ORG}/host/deployments/${DEP}%0d%0aSet-Cookie:%20x=1`,
      `/sw/o/${ORG}/deployments/..%2F..%2Fevil.example`,
      `/sw/o/${ORG}/deployments/${DEP}x`,
      `/o/${ORG}/host/deployments/${DEP}`,
    ]) {
      const res = await ctx.app.inject({ method: "GET", url });
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.headers.location, undefined, url);
    }
    const bad = await ctx.app.inject({ method: "GET", url: `/sw/o/${ORG}/host/deployments/nope` });
    assert.deepEqual(bad.json(), { detail: "No such deployment link." });
  });
});
