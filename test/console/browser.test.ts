import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { AppDatabases } from "../../src/reconciler/app-database.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { appGet, e2eEnv, freePort, gitRoot } from "../e2e/stack.ts";
import { launch, signIn } from "../helpers/console-browser.ts";
import { TEST_DATABASE_URL } from "../helpers/databases.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { REPO_ROOT } from "../helpers/process.ts";

const git = gitRoot();
const appsPort = await freePort();
const apiPort = await freePort();
const LONG = 180_000;

// The README's screenshots are taken here; they replace the ones in docs/ only when asked
// (SLIPWAY_UPDATE_SCREENSHOTS=1), so that a test run leaves the checkout as it was.
const SHOTS = process.env.SLIPWAY_UPDATE_SCREENSHOTS
  ? join(REPO_ROOT, "docs")
  : mkdtempSync(join(tmpdir(), "slipway-console-shots-"));
after(() => {
  if (!process.env.SLIPWAY_UPDATE_SCREENSHOTS) rmSync(SHOTS, { recursive: true, force: true });
});

forEachDatabase(
  "the console in Chromium",
  (suite, kind) => {
    let browser: Browser;
    let stack: RunningReconciler | undefined;
    let page: Page;
    const base = `http://127.0.0.1:${apiPort}`;
    const name = `console-${kind}`;
    let deploymentUrl = "";
    before(async () => {
      await suite.ctx.app.listen({ port: apiPort, host: "127.0.0.1" });
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      browser = await launch();
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    });
    after(async () => {
      await browser?.close();
      await stack?.stop();
      const id = deploymentUrl.split("/").at(-1);
      if (id) await new AppDatabases(TEST_DATABASE_URL, suite.ctx.keyring).drop(id).catch(() => undefined);
    });

    it("signs in, creates a template deployment and watches it reach DEPLOYED with logs", async () => {
      await signIn(page, `${base}/console/`, suite.ctx.keys.admin);
      await page.click("a:has-text('New deployment')");
      await page.fill('input[name="name"]', name);
      await page.fill('textarea[name="secrets"]', "GREETING=from-console");
      await page.click('button:has-text("Create")');
      await page.waitForURL(/#\/deployments\/[0-9a-f-]{36}$/);
      deploymentUrl = page.url();
      await page.waitForSelector(".timeline .status.good:has-text('DEPLOYED')", { timeout: LONG });
      await page.waitForFunction(
        () => (document.querySelector("[data-testid=log]")?.textContent ?? "").length > 20,
        null,
        {
          timeout: LONG,
        },
      );
      const url = await page.textContent("[data-testid=app-url]");
      assert.ok(url);
      assert.equal(await page.getAttribute("[data-testid=app-url]", "target"), "_blank");
      assert.match(String(await page.getAttribute("[data-testid=app-url]", "rel")), /\bnoopener\b/);
      // A deployed revision's log panel shows the app's side: the deploy log.
      assert.equal(await page.getAttribute("[data-testid=log]", "data-log"), "deploy");
      assert.equal((await appGet(url)).status, 200);
      if (kind === "pglite")
        await page.screenshot({ path: join(SHOTS, "console-deployment.png"), fullPage: true });
    });

    it("edits a secret (a new revision) and rolls back to the first revision", async () => {
      await page.goto(deploymentUrl);
      await page.waitForSelector("input[aria-label='Value of GREETING']");
      await page.fill("input[aria-label='Value of GREETING']", "edited");
      await page.click("button:has-text('Save secrets')");
      await page.waitForFunction(() => document.querySelectorAll(".timeline li").length === 2, null, {
        timeout: LONG,
      });
      await page.waitForFunction(
        () => document.querySelectorAll(".timeline .status.good").length === 2,
        null,
        { timeout: LONG },
      );
      await page.click("button:has-text('Roll back to this')");
      await page.waitForFunction(() => document.querySelectorAll(".timeline li").length === 3, null, {
        timeout: LONG,
      });
      await page.waitForFunction(
        () => document.querySelectorAll(".timeline .status.good").length === 3,
        null,
        { timeout: LONG },
      );
      // Newest first, numbered in creation order as everywhere else (the CLI's `rollback NAME 1`).
      const labels = await page.locator(".timeline li button.link").allTextContents();
      assert.deepEqual(
        labels.map((l) => l.split(" ")[0]),
        ["#3", "#2", "#1"],
      );
    });

    it("adds a tag (its key and value made on the way) and removes it", async () => {
      await page.goto(deploymentUrl);
      await page.waitForSelector("form[aria-label='Add a tag']");
      await page.fill("input[aria-label='Tag key']", "tier");
      await page.fill("input[aria-label='Tag value']", "gold");
      await page.click("button:has-text('Add tag')");
      await page.waitForSelector("[data-tag='tier:gold']");
      const id = deploymentUrl.split("/").at(-1);
      const tagsOf = async () => {
        const res = await fetch(`${base}/v2/deployments/${id}/tags`, {
          headers: { "x-api-key": suite.ctx.keys.admin },
        });
        return ((await res.json()) as { key: string; value: string }[]).map((t) => `${t.key}:${t.value}`);
      };
      assert.deepEqual(await tagsOf(), ["tier:gold"]);
      await page.click("button[aria-label='Remove tag tier: gold']");
      await page.waitForSelector("[data-tag='tier:gold']", { state: "detached" });
      assert.deepEqual(await tagsOf(), []);
    });

    it("the workspace picker sends every request to the chosen workspace", async () => {
      await page.goto(`${base}/console/#/deployments`);
      await page.waitForSelector(`a:has-text('${name}')`);
      await page.selectOption("select[aria-label='Workspace']", suite.ctx.workspace2Id);
      await page.waitForSelector(`a:has-text('${name}')`, { state: "detached" });
      assert.equal(
        await page.evaluate(() => sessionStorage.getItem("slipway.workspace")),
        suite.ctx.workspace2Id,
      );
      // Kept across a reload of the tab, like the key.
      await page.reload();
      await page.waitForSelector("h2:has-text('Deployments')");
      assert.equal(await page.locator(`a:has-text('${name}')`).count(), 0);
      await page.selectOption("select[aria-label='Workspace']", "");
      await page.waitForSelector(`a:has-text('${name}')`);
    });

    it("signs out (the key leaves session storage); a viewer sees no write buttons", async () => {
      await page.goto(`${base}/console/#/deployments`);
      await page.waitForSelector("h2:has-text('Deployments')");
      if (kind === "pglite") await page.screenshot({ path: join(SHOTS, "console-deployments.png") });
      await page.click("button:has-text('Sign out')");
      await page.waitForSelector('input[name="api-key"]');
      assert.equal(await page.evaluate(() => sessionStorage.length), 0);
      await signIn(page, `${base}/console/`, suite.ctx.keys.viewer);
      assert.equal(await page.locator("a:has-text('New deployment')").count(), 0);
      await page.goto(deploymentUrl);
      await page.waitForSelector(".timeline li");
      for (const label of [
        "Redeploy",
        "Roll back to this",
        "Save secrets",
        "Interrupt",
        "Add secret",
        "Add tag",
      ]) {
        assert.equal(await page.locator(`button:has-text('${label}')`).count(), 0, `viewer sees ${label}`);
      }
      assert.equal(await page.locator("form[aria-label='Add a tag']").count(), 0, "viewer edits no tags");
      await page.click("button:has-text('Sign out')");
    });
  },
  { env: { ...e2eEnv(git.root, appsPort), SLIPWAY_PUBLIC_URL: `http://127.0.0.1:${apiPort}` } },
);
