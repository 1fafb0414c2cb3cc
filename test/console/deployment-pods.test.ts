import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import type { PodReport } from "../../src/protocol/listener.ts";
import { freePort } from "../e2e/stack.ts";
import { launch, signIn } from "../helpers/console-browser.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import {
  type Agent,
  deployedOn,
  registerListener,
  report,
  runReconciler,
} from "../helpers/listener-agent.ts";

/**
 * The deployment page's Pods panel in Chromium, for a deployment on a listener: the reason its
 * active revision stopped serving (deployment.unhealthy) and each pod, refreshed by the events.
 */
forEachDatabase("the console's Pods panel in Chromium", (suite) => {
  runReconciler(suite);
  let browser: Browser;
  let page: Page;
  let base = "";
  let agent: Agent;

  before(async () => {
    const port = await freePort();
    await suite.ctx.app.listen({ port, host: "127.0.0.1" });
    base = `http://127.0.0.1:${port}`;
    agent = await registerListener(suite.ctx);
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });
  after(async () => {
    await browser?.close();
  });

  it("shows why the active revision stopped serving, each pod, and serving again after deployment.healthy", async () => {
    const ctx = suite.ctx;
    const { d, r1 } = await deployedOn(ctx, agent);
    const crash =
      "CrashLoopBackOff in container app (last exit 1, Error): back-off 40s restarting failed container=app";
    const crashing: PodReport = {
      name: `${d.name}-7d4b-0`,
      revision_id: r1,
      component: "api",
      state: "crash_looping",
      restarts: 7,
      reason: crash,
    };
    const sent = await report(
      ctx,
      agent,
      [],
      [
        {
          deployment_id: d.id,
          revision_id: r1,
          serving: false,
          reason: `${crashing.name}: ${crash}`,
          pods: [crashing],
        },
      ],
    );
    assert.equal(sent.status, 204, JSON.stringify(sent.body));

    await signIn(page, `${base}/console/#/deployments/${d.id}`, ctx.keys.viewer, "h2:has-text('Pods')");
    const banner = page.locator("[data-testid='unhealthy']");
    await banner.waitFor();
    assert.match((await banner.textContent()) ?? "", /Unhealthy since .*CrashLoopBackOff in container app/);
    const row = page.locator(`tr[data-pod='${crashing.name}']`);
    const text = (await row.textContent()) ?? "";
    assert.ok(text.includes("restarting") && text.includes("7") && text.includes("last exit 1"), text);

    // The listener reports the pod ready again: the page follows deployment.healthy by itself.
    await report(
      ctx,
      agent,
      [],
      [
        {
          deployment_id: d.id,
          revision_id: r1,
          serving: true,
          pods: [{ ...crashing, state: "ready", reason: undefined }],
        },
      ],
    );
    await page.locator("[data-testid='serving']:has-text('Serving')").waitFor();
    assert.equal(await banner.count(), 0);
  });
});
