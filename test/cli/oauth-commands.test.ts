import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { freePort } from "../e2e/stack.ts";
import { runCli } from "../helpers/cli.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { type AuthAnswer, callback, LOOPBACK_ENV, send } from "../helpers/oauth.ts";
import { type Standin, startStandin } from "../helpers/oauth-provider-standins.ts";

forEachDatabase(
  "slipway providers catalog|create --template, tokens ls|revoke",
  (suite) => {
    let env: Record<string, string>;
    let s: Standin;
    const home = mkdtempSync(join(tmpdir(), "slipway-cli-oauth-"));

    before(async () => {
      const port = await freePort();
      await suite.ctx.app.listen({ port, host: "127.0.0.1" });
      env = {
        HOME: home,
        XDG_CONFIG_HOME: join(home, "config"),
        SLIPWAY_URL: `http://127.0.0.1:${port}`,
        SLIPWAY_API_KEY: suite.ctx.keys.admin,
      };
      s = await startStandin("google");
    });
    after(async () => {
      await s?.close();
      rmSync(home, { recursive: true, force: true });
    });

    it("providers catalog lists the templates; catalog ID shows one; an unknown one is 4", async () => {
      const list = await runCli(["providers", "catalog"], env);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /github\s+GitHub\s+https:\/\/github\.com\/login\/oauth\/authorize/);
      assert.match(list.stdout, /microsoft/);
      const one = await runCli(["providers", "catalog", "microsoft", "--json"], env);
      assert.equal(one.code, 0, one.stderr);
      assert.ok((JSON.parse(one.stdout) as { params: Record<string, unknown> }).params.tenant);
      assert.equal((await runCli(["providers", "catalog", "myspace"], env)).code, 4);
    });

    it("providers create --template fills the rest; --param fills placeholders; a missing one is a usage error", async () => {
      const gh = await runCli(
        [
          "providers",
          "create",
          "--template",
          "github",
          "--provider-id",
          "gh",
          "--client-id",
          "Iv1.x",
          "--client-secret",
          "s",
          "--json",
        ],
        env,
      );
      assert.equal(gh.code, 0, gh.stderr);
      const p = JSON.parse(gh.stdout) as { auth_url: string; template: string };
      assert.equal(p.auth_url, "https://github.com/login/oauth/authorize");
      assert.equal(p.template, "github");
      const missing = await runCli(
        [
          "providers",
          "create",
          "--template",
          "microsoft",
          "--provider-id",
          "ms",
          "--client-id",
          "c",
          "--client-secret",
          "s",
        ],
        env,
      );
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /tenant/);
      const ms = await runCli(
        [
          "providers",
          "create",
          "--template",
          "microsoft",
          "--provider-id",
          "ms",
          "--client-id",
          "c",
          "--client-secret",
          "s",
          "--param",
          "tenant=contoso.onmicrosoft.com",
          "--json",
        ],
        env,
      );
      assert.equal(ms.code, 0, ms.stderr);
      assert.match(
        ms.stdout,
        /login\.microsoftonline\.com\/contoso\.onmicrosoft\.com\/oauth2\/v2\.0\/authorize/,
      );
      assert.equal(
        (await runCli(["providers", "create", "--template", "github", "--client-id", "c"], env)).code,
        2,
      );
    });

    it("tokens ls shows who holds a token and its state; tokens revoke ends it", async () => {
      const created = await send(suite.ctx, "POST", "/v2/auth/providers", {
        provider_id: "google-app",
        template: "google",
        client_id: s.clientId,
        client_secret: s.clientSecret,
        auth_url: s.authUrl,
        token_url: s.tokenUrl,
      });
      assert.equal(created.statusCode, 200, created.body);
      const pending = (
        await send(suite.ctx, "POST", "/v2/auth/authenticate", {
          provider: "google-app",
          user_id: "alice",
          scopes: ["openid"],
        })
      ).json() as AuthAnswer;
      assert.equal((await callback(suite.ctx, s.authorize(pending.url ?? ""))).statusCode, 200);
      const done = (
        await send(suite.ctx, "GET", `/v2/auth/wait/${pending.auth_id}?timeout=5`)
      ).json() as AuthAnswer;
      const ls = await runCli(["tokens", "ls", "--provider", "google-app"], env);
      assert.equal(ls.code, 0, ls.stderr);
      assert.match(ls.stdout, /google-app\s+alice\s+ok\s+openid/);
      assert.ok(!ls.stdout.includes(done.token ?? "no-token"), "never the token");
      const revoke = await runCli(["tokens", "revoke", done.token_id ?? ""], env);
      assert.equal(revoke.code, 0, revoke.stderr);
      const after = await runCli(["tokens", "ls", "--provider", "google-app", "--json"], env);
      assert.deepEqual(JSON.parse(after.stdout), []);
      assert.equal((await runCli(["tokens", "revoke", done.token_id ?? ""], env)).code, 4);
      assert.equal((await runCli(["tokens", "frobnicate"], env)).code, 2);
    });
  },
  { env: LOOPBACK_ENV },
);
