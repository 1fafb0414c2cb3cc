import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import type { Browser } from "playwright-core";
import { recordRequest } from "../../src/runtimes/local/routing/request-metrics.ts";
import { freePort } from "../e2e/stack.ts";
import { launch, signIn } from "../helpers/console-browser.ts";
import { createDocker, type Deployment } from "../helpers/deployments.ts";
import { forEachDatabase } from "../helpers/harness.ts";

// The server runs in this process: what its apps router records (request-metrics.ts, driven through
// the real edge in test/resources/domains/serving.test.ts) is what the page's charts read.
forEachDatabase("the console's traffic panel in Chromium", (suite) => {
  let browser: Browser;
  let base = "";
  let dep: Deployment;
  before(async () => {
    const port = await freePort();
    await suite.ctx.app.listen({ port, host: "127.0.0.1" });
    base = `http://127.0.0.1:${port}`;
    dep = await createDocker(suite.ctx);
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
  });

  it("shows the last hour's answers by status class", async () => {
    recordRequest(dep.name, 4, 200);
    recordRequest(dep.name, 9, 201);
    recordRequest(dep.name, 30, 404);
    recordRequest(dep.name, 700, 503);
    const page = await browser.newPage();
    await signIn(page, `${base}/console/#/deployments/${dep.id}`, suite.ctx.keys.viewer, "[data-statuses]");
    assert.equal(await page.locator("[data-statuses]").textContent(), "By status: 2xx 2 · 4xx 1 · 5xx 1");
    // (The per-minute charts show the current minute, which may have turned since: not asserted.)
    await page.close();
  });
});
