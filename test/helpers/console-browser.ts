// What the console's browser tests share: Chromium, signing in, and a fresh bundle of the console.
import { type Browser, chromium, type Page } from "playwright-core";
import { buildConsole } from "../../src/platform/console-bundle.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Builds the console from the current source (the server serves a bundle it finds as it is). */
export async function launch(): Promise<Browser> {
  await buildConsole();
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}

/** Signs in on the page at `url` (the console or a link into it) and waits for the first page. */
export async function signIn(page: Page, url: string, key: string, ready = "h2:has-text('Deployments')") {
  await page.goto(url);
  await page.fill('input[name="api-key"]', key);
  await page.click('button:has-text("Sign in")');
  await page.waitForSelector(ready);
}
