// The console in Chromium on failed deployments (badge, filter, the failed step's log, a long log
// line), the hosted service's console link, OAuth provider editing, revision numbers and the
// template list of New deployment.
import assert from "node:assert/strict";
import { after, afterEach, before, beforeEach, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { AppDatabases } from "../../src/reconciler/app-database.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { Api, AppRepo, e2eEnv, freePort, gitRoot } from "../e2e/stack.ts";
import { launch, signIn } from "../helpers/console-browser.ts";
import { TEST_DATABASE_URL } from "../helpers/databases.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { waitForRevision } from "../helpers/wait.ts";

const git = gitRoot();
const appsPort = await freePort();
const apiPort = await freePort();
const LONG_LINE = "L".repeat(3000);

interface Created {
  id: string;
  name: string;
  revision: string;
}

forEachDatabase(
  "the console in Chromium: failures, links, providers",
  (suite, kind) => {
    let browser: Browser;
    let stack: RunningReconciler | undefined;
    let context: BrowserContext;
    let page: Page;
    const base = `http://127.0.0.1:${apiPort}`;
    const created: string[] = [];
    let crashed: Created;
    let broken: Created;
    let elsewhere: Created;

    /** A codehost deployment of a new repository at `version`, created with `headers`' key. */
    async function deploy(
      name: string,
      mode: "ok" | "exit",
      opts: { install?: string; workspace?: string } = {},
    ): Promise<Created> {
      const api = new Api(suite.ctx);
      const repo = new AppRepo(git.team, name);
      repo.commit({ version: "1", mode });
      const integrationId = await api.integration(git.team);
      const res = await suite.ctx.app.inject({
        method: "POST",
        url: "/v2/deployments",
        headers: suite.ctx.headers(suite.ctx.keys.admin, {
          "content-type": "application/json",
          ...(opts.workspace ? { "x-tenant-id": opts.workspace } : {}),
        }),
        payload: JSON.stringify({
          name,
          source: "codehost",
          source_config: {
            integration_id: integrationId,
            repo_url: await api.repoUrl(integrationId, name),
            ...(opts.install ? { install_command: opts.install } : {}),
          },
          source_revision_config: { repo_ref: "main", framework_config_path: "slipway.json" },
        }),
      });
      assert.equal(res.statusCode, 201, res.body);
      const dep = res.json<{ id: string; latest_revision_id: string }>();
      created.push(dep.id);
      return { id: dep.id, name, revision: dep.latest_revision_id };
    }

    const settle = (rid: string) => waitForRevision(suite.ctx.db, rid, { timeoutMs: 120_000 });

    before(async () => {
      await suite.ctx.app.listen({ port: apiPort, host: "127.0.0.1" });
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      browser = await launch();
      crashed = await deploy(`crashes-${kind}`, "exit");
      broken = await deploy(`breaks-${kind}`, "ok", {
        install: `echo installing-marker; node -e "console.log('${LONG_LINE}')"; exit 7`,
      });
      elsewhere = await deploy(`elsewhere-${kind}`, "exit", { workspace: suite.ctx.workspace2Id });
      assert.equal(await settle(crashed.revision), "DEPLOY_FAILED");
      assert.equal(await settle(broken.revision), "BUILD_FAILED");
      await settle(elsewhere.revision);
    });
    // Each test has a tab of its own (no key in its session storage yet), so each runs alone.
    beforeEach(async () => {
      context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
    });
    afterEach(() => context?.close());
    const admin = (hash: string, ready: string) =>
      signIn(page, `${base}/console/${hash}`, suite.ctx.keys.admin, ready);
    after(async () => {
      await browser?.close();
      await stack?.stop();
      const dbs = new AppDatabases(TEST_DATABASE_URL, suite.ctx.keyring);
      for (const id of created) await dbs.drop(id).catch(() => undefined);
    });

    it("the list's badge is the latest revision's state, red when it failed; the filter offers revision states", async () => {
      await admin("", "h2:has-text('Deployments')");
      const row = page.locator("tr", { has: page.locator(`a:has-text('${crashed.name}')`) });
      const badge = row.locator(".status").first();
      await badge.waitFor();
      assert.equal(await badge.textContent(), "DEPLOY_FAILED");
      assert.match(String(await badge.getAttribute("class")), /\bbad\b/);
      assert.equal(
        await badge.evaluate((el) => getComputedStyle(el).backgroundColor),
        "rgb(251, 218, 218)",
        "a failed revision's badge is red",
      );
      // The app's URL is a link that opens a new tab that cannot reach back into the console.
      const link = row.locator("td.url a");
      assert.equal(await link.getAttribute("target"), "_blank");
      assert.match(String(await link.getAttribute("rel")), /\bnoopener\b/);
      assert.match(String(await link.getAttribute("href")), /^http:\/\/crashes-/);

      const [request] = await Promise.all([
        page.waitForRequest((r) => r.url().includes("latest_revision_status=DEPLOY_FAILED")),
        page.selectOption("select[aria-label='Status']", "revision:DEPLOY_FAILED"),
      ]);
      assert.doesNotMatch(request.url(), /[?&]status=/);
      await page.waitForSelector(`a:has-text('${broken.name}')`, { state: "detached" });
      await page.waitForSelector(`a:has-text('${crashed.name}')`);

      await page.selectOption("select[aria-label='Status']", { label: "failed (create, build or deploy)" });
      await page.waitForSelector(`a:has-text('${broken.name}')`);
      await page.waitForSelector(`a:has-text('${crashed.name}')`);

      // The deployment's own statuses are still offered, sent as status=.
      const [byStatus] = await Promise.all([
        page.waitForRequest((r) => /[?&]status=UNUSED/.test(r.url())),
        page.selectOption("select[aria-label='Status']", "deployment:UNUSED"),
      ]);
      assert.doesNotMatch(byStatus.url(), /latest_revision_status/);
      await page.waitForSelector(`a:has-text('${crashed.name}')`, { state: "detached" });
    });

    it("a failed deploy opens on the deploy log, a failed build on the build log; the selected tab shows", async () => {
      await admin(`#/deployments/${crashed.id}`, `h2:has-text('${crashed.name}')`);
      const log = page.locator("[data-testid=log]");
      await page.waitForFunction(() =>
        document.querySelector("[data-testid=log]")?.textContent?.includes("starting and exiting"),
      );
      assert.equal(await log.getAttribute("data-log"), "deploy");
      const deployTab = page.locator("[role=tab]:has-text('deploy log')");
      const buildTab = page.locator("[role=tab]:has-text('build log')");
      assert.equal(await deployTab.getAttribute("aria-selected"), "true");
      assert.equal(await buildTab.getAttribute("aria-selected"), "false");
      const background = (tab: typeof deployTab) =>
        tab.evaluate((el) => getComputedStyle(el).backgroundColor);
      assert.notEqual(
        await background(deployTab),
        await background(buildTab),
        "the selected tab looks selected",
      );
      // A pick sticks.
      await buildTab.click();
      await page.waitForSelector("[data-testid=log][data-log=build]");
      assert.equal(await buildTab.getAttribute("aria-selected"), "true");
      assert.equal(await deployTab.getAttribute("aria-selected"), "false");

      await page.goto(`${base}/console/#/deployments/${broken.id}`);
      await page.waitForFunction(() =>
        document.querySelector("[data-testid=log]")?.textContent?.includes("installing-marker"),
      );
      assert.equal(await log.getAttribute("data-log"), "build");
      assert.equal(await buildTab.getAttribute("aria-selected"), "true");
    });

    it("a long log line wraps inside the log panel and leaves the revisions column its width", async () => {
      await admin(`#/deployments/${broken.id}`, `h2:has-text('${broken.name}')`);
      await page.waitForFunction(
        (line) => document.querySelector("[data-testid=log]")?.textContent?.includes(line),
        LONG_LINE,
      );
      const layout = await page.evaluate(() => {
        const columns = document.querySelector(".columns");
        const [revisions] = columns ? Array.from(columns.children) : [];
        const log = document.querySelector("[data-testid=log]");
        return {
          columns: columns?.getBoundingClientRect().width ?? 0,
          revisions: revisions?.getBoundingClientRect().width ?? 0,
          logScroll: log ? log.scrollWidth - log.clientWidth : -1,
          pageScroll: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        };
      });
      // The grid gives the revisions 1 part of 2.4 (less the gap).
      assert.ok(layout.revisions > layout.columns * 0.35, JSON.stringify(layout));
      assert.equal(layout.logScroll, 0, "the line wraps: no sideways scrolling in the panel");
      assert.equal(layout.pageScroll, 0, "the page does not widen");
    });

    it("revisions are numbered by their record's number, not by their place in the list", async () => {
      // The list's answer, with numbers no list position gives.
      await page.route("**/v2/deployments/*/revisions?*", async (route) => {
        const res = await route.fetch();
        const body = (await res.json()) as { resources: { number: number }[] };
        for (const r of body.resources) r.number += 100;
        await route.fulfill({ response: res, json: body });
      });
      await admin(`#/deployments/${crashed.id}`, `h2:has-text('${crashed.name}')`);
      await page.waitForSelector(".timeline li");
      assert.match(String(await page.locator(".timeline li button.link").first().textContent()), /^#101 /);
    });

    it("the hosted service's console link opens the deployment, in the key's workspace that holds it", async () => {
      const link = `${base}/o/${suite.ctx.orgId}/host/deployments/${elsewhere.id}`;
      // No key yet: the console asks for one, then shows the deployment.
      await signIn(page, link, suite.ctx.keys.admin, `h2:has-text('${elsewhere.name}')`);
      assert.equal(page.url(), `${base}/console/#/deployments/${elsewhere.id}`);
      assert.equal(
        await page.evaluate(() => sessionStorage.getItem("slipway.workspace")),
        suite.ctx.workspace2Id,
        "the console moved to the deployment's workspace",
      );
      // The same without /host, with a key bound to that workspace.
      await page.click("button:has-text('Sign out')");
      await signIn(
        page,
        `${base}/o/${suite.ctx.orgId}/deployments/${crashed.id}`,
        suite.ctx.keys.boundMember,
        "[role=alert]",
      );
      // The bound key cannot see the default workspace's deployment: "not found", no other workspace.
      assert.match(String(await page.textContent("[role=alert]")), /not found/i);
      assert.equal(await page.evaluate(() => sessionStorage.getItem("slipway.workspace")), null);
      await page.goto(`${base}/o/${suite.ctx.orgId}/deployments/${elsewhere.id}`);
      await page.waitForSelector(`h2:has-text('${elsewhere.name}')`);
    });

    it("OAuth providers: added with PKCE and auth method, shown with the callback URL, edited (PATCH)", async () => {
      const api = new Api(suite.ctx);
      await admin("#/providers", "h2:has-text('OAuth providers')");
      const form = page.locator("form[aria-label='Add a provider']");
      await form.waitFor();
      await form.locator("input[name=provider_id]").fill("gh-console");
      // The callback URL is the server's public URL (SLIPWAY_PUBLIC_URL, not this page's origin).
      assert.equal(
        await form.locator("[data-testid=callback-url]").textContent(),
        `http://localhost:${apiPort}/v2/auth/callback/gh-console`,
      );
      await form.locator("input[name=name]").fill("GitHub");
      await form.locator("input[name=client_id]").fill("client-1");
      await form.locator("input[name=client_secret]").fill("secret-1");
      await form.locator("input[name=auth_url]").fill("https://github.com/login/oauth/authorize");
      await form.locator("input[name=token_url]").fill("https://github.com/login/oauth/access_token");
      await form.locator("select[name=token_endpoint_auth_method]").selectOption("client_secret_basic");
      await form.locator("button:has-text('Add provider')").click();
      await page.waitForSelector("tr[data-provider='gh-console']");
      type Provider = {
        name: string;
        uses_pkce: boolean;
        code_challenge_method: string | null;
        token_endpoint_auth_method: string;
        has_client_secret: boolean;
        auth_url: string;
      };
      const read = () => api.call<Provider>("GET", "/v2/auth/providers/gh-console");
      const added = await read();
      assert.equal(added.token_endpoint_auth_method, "client_secret_basic");
      assert.equal(added.uses_pkce, true);
      assert.equal(added.code_challenge_method, "S256");
      assert.equal(added.has_client_secret, true);
      assert.equal(
        await page.locator("tr[data-provider='gh-console'] td.url").textContent(),
        `http://localhost:${apiPort}/v2/auth/callback/gh-console`,
      );

      const row = page.locator("tr[data-provider='gh-console']");
      await row.locator("button:has-text('Edit')").click();
      const edit = page.locator("form[aria-label='Edit provider gh-console']");
      assert.equal(await edit.locator("input[name=name]").inputValue(), "GitHub");
      assert.equal(await edit.locator("input[name=provider_id]").isDisabled(), true);
      // Bad input is refused with the server's reason, and changes nothing.
      await edit.locator("input[name=auth_url]").fill("http://github.com/insecure");
      await edit.locator("button:has-text('Save provider')").click();
      await edit.locator("[role=alert]").waitFor();
      assert.match(String(await edit.locator("[role=alert]").textContent()), /auth_url/);
      assert.equal((await read()).auth_url, "https://github.com/login/oauth/authorize");

      await edit.locator("input[name=auth_url]").fill("https://github.com/login/oauth/authorize2");
      await edit.locator("input[name=name]").fill("GitHub (edited)");
      await edit.locator("input[name=uses_pkce]").uncheck();
      await edit.locator("button:has-text('Save provider')").click();
      await page.waitForSelector("[role=status]:has-text('Saved provider gh-console')");
      const edited = await read();
      assert.equal(edited.name, "GitHub (edited)");
      assert.equal(edited.auth_url, "https://github.com/login/oauth/authorize2");
      assert.equal(edited.uses_pkce, false);
      assert.equal(edited.has_client_secret, true, "an empty secret field keeps the stored secret");
      assert.equal(edited.token_endpoint_auth_method, "client_secret_basic");

      // A viewer sees the providers and their callback URLs, and no way to change them.
      await page.click("button:has-text('Sign out')");
      await signIn(
        page,
        `${base}/console/#/providers`,
        suite.ctx.keys.viewer,
        "tr[data-provider='gh-console']",
      );
      assert.equal(await page.locator("button:has-text('Edit')").count(), 0);
      assert.equal(await page.locator("button:has-text('Delete')").count(), 0);
      assert.equal(await page.locator("form").count(), 0);
      assert.match(
        String(await page.textContent("tr[data-provider='gh-console'] td.url")),
        /\/v2\/auth\/callback\/gh-console$/,
      );
    });

    it("New deployment shows the template list at once (fetched at sign-in, not when the form opens)", async () => {
      const templates = page.waitForResponse((r) => r.url().endsWith("/v2/templates") && r.ok());
      await signIn(page, `${base}/console/`, suite.ctx.keys.member);
      await templates;
      // From here on the server cannot answer the list: the form must already have it.
      await page.route("**/v2/templates", (route) => route.abort());
      await page.click("a:has-text('New deployment')");
      await page.waitForSelector("select[name=template]");
      assert.ok((await page.locator("select[name=template] option").count()) > 0);
      assert.equal(await page.locator("[role=alert]").count(), 0);
    });
  },
  {
    env: {
      ...e2eEnv(git.root, appsPort),
      // Another name for this server than the page's own origin: the console must use this one.
      SLIPWAY_PUBLIC_URL: `http://localhost:${apiPort}`,
    },
  },
);
