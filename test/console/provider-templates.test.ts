import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { freePort } from "../e2e/stack.ts";
import { launch, signIn } from "../helpers/console-browser.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { send } from "../helpers/oauth.ts";

interface Provider {
  provider_id: string;
  name: string;
  auth_url: string;
  token_url: string;
  template?: string;
  template_params?: Record<string, string>;
  token_endpoint_auth_method: string;
}

forEachDatabase("the console's add-provider form with the catalog, in Chromium", (suite) => {
  let browser: Browser;
  let page: Page;
  let base = "";
  const ctx = (): TestContext => suite.ctx;
  const read = async (slug: string) =>
    (await send(ctx(), "GET", `/v2/auth/providers/${slug}`)).json() as Provider;

  before(async () => {
    const port = await freePort();
    await ctx().app.listen({ port, host: "127.0.0.1" });
    base = `http://127.0.0.1:${port}`;
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signIn(page, `${base}/console/#/providers`, ctx().keys.admin, "h2:has-text('OAuth providers')");
  });
  after(async () => {
    await browser?.close();
  });

  it("a template fills in the URLs and quirks: only the ids and the secret are typed", async () => {
    await page.selectOption('select[name="template"]', "notion");
    assert.equal(await page.locator('input[name="auth_url"]').count(), 0, "no URLs to type");
    assert.match((await page.textContent("[data-template=notion]")) ?? "", /Basic auth/);
    await page.fill('input[name="provider_id"]', "notion");
    await page.fill('input[name="client_id"]', "n-client");
    await page.fill('input[name="client_secret"]', "n-secret");
    await page.click('button:has-text("Add provider")');
    await page.waitForSelector("tr[data-provider=notion]");
    const p = await read("notion");
    assert.equal(p.name, "Notion");
    assert.equal(p.auth_url, "https://api.notion.com/v1/oauth/authorize");
    assert.equal(p.token_endpoint_auth_method, "client_secret_basic");
    assert.equal(p.template, "notion");
  });

  it("a template with a placeholder asks for it (Microsoft's tenant)", async () => {
    await page.selectOption('select[name="template"]', "microsoft");
    await page.fill('input[name="provider_id"]', "entra");
    await page.fill('input[name="name"]', "Contoso Entra");
    await page.fill('input[name="client_id"]', "m-client");
    await page.fill('input[name="client_secret"]', "m-secret");
    await page.fill('input[name="param-tenant"]', "contoso.onmicrosoft.com");
    await page.click('button:has-text("Add provider")');
    await page.waitForSelector("tr[data-provider=entra]");
    const p = await read("entra");
    assert.equal(p.name, "Contoso Entra");
    assert.equal(p.token_url, "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token");
    assert.deepEqual(p.template_params, { tenant: "contoso.onmicrosoft.com" });
  });

  it("without a template the form is as before", async () => {
    assert.equal(await page.inputValue('select[name="template"]'), "", "the form starts again without one");
    await page.fill('input[name="provider_id"]', "by-hand");
    await page.fill('input[name="name"]', "By hand");
    await page.fill('input[name="client_id"]', "h");
    await page.fill('input[name="client_secret"]', "h-secret");
    await page.fill('input[name="auth_url"]', "https://idp.example.com/authorize");
    await page.fill('input[name="token_url"]', "https://idp.example.com/token");
    await page.click('button:has-text("Add provider")');
    await page.waitForSelector("tr[data-provider=by-hand]");
    const p = await read("by-hand");
    assert.equal(p.template, undefined);
    assert.equal(p.auth_url, "https://idp.example.com/authorize");
  });
});
