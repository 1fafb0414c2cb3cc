import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { freePort } from "../e2e/stack.ts";
import { launch, signIn } from "../helpers/console-browser.ts";
import { call, createDocker, type Deployment } from "../helpers/deployments.ts";
import { forEachDatabase } from "../helpers/harness.ts";

forEachDatabase(
  "the console's Domains panel in Chromium",
  (suite, kind) => {
    let browser: Browser;
    let page: Page;
    let base = "";
    let dep: Deployment;
    const host = `www.${kind}.example.com`;
    const domainsOf = async () =>
      (await call<{ hostname: string }[]>(suite.ctx, "GET", `/v2/deployments/${dep.id}/domains`)).body;

    before(async () => {
      const port = await freePort();
      await suite.ctx.app.listen({ port, host: "127.0.0.1" });
      base = `http://127.0.0.1:${port}`;
      dep = await createDocker(suite.ctx);
      browser = await launch();
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    });
    after(async () => {
      await browser?.close();
    });

    it("a member adds a domain and sees its pending state and the TXT record to create", async () => {
      await signIn(
        page,
        `${base}/console/#/deployments/${dep.id}`,
        suite.ctx.keys.member,
        "h2:has-text('Domains')",
      );
      await page.waitForSelector("text=No custom domains.");
      await page.fill("input[aria-label='Hostname']", host.toUpperCase());
      await page.click("button:has-text('Add domain')");
      const row = page.locator(`tr[data-domain='${host}']`);
      await row.waitFor();
      const [domain] = (
        await call<{ verification: { token: string } }[]>(
          suite.ctx,
          "GET",
          `/v2/deployments/${dep.id}/domains`,
        )
      ).body;
      assert.ok(domain);
      assert.equal(await row.locator(".status").textContent(), "pending");
      const text = (await row.textContent()) ?? "";
      assert.ok(text.includes(`_slipway.${host}`), text);
      assert.ok(text.includes(domain.verification.token), text);
      assert.ok(text.includes("none"), "the certificate state");
    });

    it("a refused hostname shows the server's reason and adds nothing", async () => {
      await page.fill("input[aria-label='Hostname']", "*.example.com");
      await page.click("button:has-text('Add domain')");
      const alert = page.locator("[role='alert']");
      await alert.waitFor();
      assert.match((await alert.textContent()) ?? "", /[Ww]ildcard/);
      assert.equal((await domainsOf()).length, 1);
    });

    it("a viewer sees the domains but cannot add or remove", async () => {
      const viewer = await browser.newPage();
      try {
        await signIn(
          viewer,
          `${base}/console/#/deployments/${dep.id}`,
          suite.ctx.keys.viewer,
          "h2:has-text('Domains')",
        );
        await viewer.locator(`tr[data-domain='${host}']`).waitFor();
        assert.equal(await viewer.locator("button:has-text('Add domain')").count(), 0);
        assert.equal(await viewer.locator("button:has-text('Remove')").count(), 0);
      } finally {
        await viewer.close();
      }
    });

    it("Remove takes the domain away", async () => {
      await page.click(`button[aria-label='Remove domain ${host}']`);
      await page.waitForSelector(`tr[data-domain='${host}']`, { state: "detached" });
      assert.deepEqual(await domainsOf(), []);
    });
  },
  { env: { SLIPWAY_APPS_DOMAIN: "apps.test" } },
);
