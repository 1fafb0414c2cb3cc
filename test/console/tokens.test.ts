import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import type { Browser, Page } from "playwright-core";
import { encryptionContext } from "../../src/crypto/envelope.ts";
import { freePort } from "../e2e/stack.ts";
import { launch, signIn } from "../helpers/console-browser.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { type AuthAnswer, callback, LOOPBACK_ENV, send } from "../helpers/oauth.ts";
import { type Standin, startStandin } from "../helpers/oauth-provider-standins.ts";

const SLUG = "google-app";

forEachDatabase(
  "the console's Tokens page in Chromium",
  (suite) => {
    let browser: Browser;
    let page: Page;
    let s: Standin;
    let base = "";
    const tokens: Record<string, AuthAnswer & { token: string; token_id: string }> = {};
    const ctx = (): TestContext => suite.ctx;

    const obtain = async (user: string) => {
      const pending = (
        await send(ctx(), "POST", "/v2/auth/authenticate", {
          provider: SLUG,
          user_id: user,
          scopes: ["openid", "email"],
        })
      ).json() as AuthAnswer;
      assert.equal((await callback(ctx(), s.authorize(pending.url ?? ""))).statusCode, 200);
      tokens[user] = (
        await send(ctx(), "GET", `/v2/auth/wait/${pending.auth_id}?timeout=5`)
      ).json() as AuthAnswer & {
        token: string;
        token_id: string;
      };
    };

    before(async () => {
      const port = await freePort();
      await ctx().app.listen({ port, host: "127.0.0.1" });
      base = `http://127.0.0.1:${port}`;
      s = await startStandin("google");
      const created = await send(ctx(), "POST", "/v2/auth/providers", {
        provider_id: SLUG,
        template: "google",
        client_id: s.clientId,
        client_secret: s.clientSecret,
        auth_url: s.authUrl,
        token_url: s.tokenUrl,
      });
      assert.equal(created.statusCode, 200, created.body);
      await obtain("alice");
      await obtain("bob");
      // Bob's grant dies at the provider: the next refresh is refused for good and his token kept, broken.
      const id = tokens.bob?.token_id ?? "";
      const bogus = ctx().keyring.encrypt(
        "never-issued",
        encryptionContext("oauth_tokens", "refresh_token_enc", id),
      );
      await ctx().db.orm.execute(
        sql`UPDATE oauth_tokens SET refresh_token_enc = ${bogus}, expires_at = now() - interval '1 minute' WHERE id = ${id}::uuid`,
      );
      await send(ctx(), "POST", "/v2/auth/authenticate", {
        provider: SLUG,
        user_id: "bob",
        scopes: ["openid"],
      });
      browser = await launch();
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      page.on("dialog", (d) => void d.accept());
    });
    after(async () => {
      await browser?.close();
      await s?.close();
    });

    it("shows per provider who holds a token, scopes, expiry, last refresh and why one is broken; never a value", async () => {
      await signIn(page, `${base}/console/`, ctx().keys.admin);
      await page.click("a:has-text('Tokens')");
      await page.waitForSelector(`[data-provider='${SLUG}'] h3:has-text('${SLUG}')`);
      const alice = page.locator(`tr[data-token='${tokens.alice?.token_id}']`);
      const bob = page.locator(`tr[data-token='${tokens.bob?.token_id}']`);
      await alice.waitFor();
      assert.match((await alice.textContent()) ?? "", /alice.*openid.*email/);
      assert.equal(await alice.locator(".status").textContent(), "ok");
      assert.equal(await bob.locator(".status").textContent(), "broken");
      assert.match((await bob.locator(".token-error").textContent()) ?? "", /invalid_grant/);
      const html = await page.content();
      for (const t of Object.values(tokens)) assert.ok(!html.includes(t.token), "no token value on the page");
    });

    it("revoke removes the token (at the provider, then here)", async () => {
      await page.click(`tr[data-token='${tokens.alice?.token_id}'] button:has-text('Revoke')`);
      await page.waitForSelector(`tr[data-token='${tokens.alice?.token_id}']`, { state: "detached" });
      const left = (await send(ctx(), "GET", `/v2/auth/tokens?provider_id=${SLUG}`)).json() as {
        id: string;
      }[];
      assert.deepEqual(
        left.map((t) => t.id),
        [tokens.bob?.token_id],
      );
    });

    it("a viewer sees the tokens but no Revoke button", async () => {
      const viewer = await browser.newPage();
      try {
        await signIn(viewer, `${base}/console/#/tokens`, ctx().keys.viewer, "h2:has-text('Tokens')");
        await viewer.waitForSelector(`tr[data-token='${tokens.bob?.token_id}']`);
        assert.equal(await viewer.locator("button:has-text('Revoke')").count(), 0);
      } finally {
        await viewer.close();
      }
    });
  },
  { env: LOOPBACK_ENV },
);
