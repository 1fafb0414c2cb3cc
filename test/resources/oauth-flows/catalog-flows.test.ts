import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { type AuthAnswer, callback, callbackFor, LOOPBACK_ENV, send } from "../../helpers/oauth.ts";
import {
  MICROSOFT_TENANT,
  type Standin,
  type Style,
  startStandin,
} from "../../helpers/oauth-provider-standins.ts";

interface TokenRecord {
  id: string;
  provider_id: string;
  scopes: string[];
  has_refresh_token: boolean;
  token_type: string;
}

/** What each provider's authorization URL must carry, beyond the standard parameters. */
const EXPECT: Record<Style, { scopes: string[]; checks: (q: URLSearchParams) => void; refresh: boolean }> = {
  github: {
    scopes: ["repo", "read:user"],
    checks: (q) => {
      assert.equal(q.get("scope"), "repo read:user");
      assert.equal(q.get("code_challenge_method"), "S256");
    },
    refresh: true,
  },
  google: {
    scopes: ["openid", "email", "https://www.googleapis.com/auth/drive.readonly"],
    checks: (q) => {
      assert.equal(q.get("access_type"), "offline");
      assert.equal(q.get("prompt"), "consent");
    },
    refresh: true,
  },
  slack: {
    scopes: ["users:read", "chat:write"],
    checks: (q) => {
      assert.equal(q.get("user_scope"), "users:read,chat:write");
      assert.equal(q.has("scope"), false);
    },
    refresh: true,
  },
  notion: {
    scopes: [],
    checks: (q) => {
      assert.equal(q.get("owner"), "user");
      assert.equal(q.has("code_challenge"), false);
    },
    refresh: false,
  },
  microsoft: {
    // None given: the template's defaults, offline_access among them.
    scopes: [],
    checks: (q) => {
      assert.deepEqual(q.get("scope")?.split(" "), ["openid", "profile", "offline_access", "User.Read"]);
    },
    refresh: true,
  },
};
const STYLES = Object.keys(EXPECT) as Style[];

forEachDatabase(
  "full flows of catalog templates against loopback stand-ins of the providers",
  (suite) => {
    const standins = new Map<Style, Standin>();
    const ctx = (): TestContext => suite.ctx;

    before(async () => {
      for (const style of STYLES) {
        const s = await startStandin(style);
        standins.set(style, s);
        const res = await send(ctx(), "POST", "/v2/auth/providers", {
          provider_id: `${style}-app`,
          template: style,
          ...(style === "microsoft" ? { template_params: { tenant: MICROSOFT_TENANT } } : {}),
          client_id: s.clientId,
          client_secret: s.clientSecret,
          // The template's URLs are the provider's; these point at the stand-in (given fields win).
          auth_url: s.authUrl,
          token_url: s.tokenUrl,
          api_base_url: s.apiBase,
        });
        assert.equal(res.statusCode, 200, res.body);
      }
    });
    after(async () => {
      for (const s of standins.values()) await s.close();
    });

    const authenticate = async (body: Record<string, unknown>): Promise<AuthAnswer> => {
      const res = await send(ctx(), "POST", "/v2/auth/authenticate", body);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as AuthAnswer;
    };

    for (const style of STYLES) {
      it(`${style}: authorize with its quirks, exchange, use, refresh`, async () => {
        const s = standins.get(style);
        assert.ok(s);
        const expect = EXPECT[style];
        const ask = { provider: `${style}-app`, user_id: `u-${style}`, scopes: expect.scopes };
        const pending = await authenticate(ask);
        assert.equal(pending.status, "pending", JSON.stringify(pending));
        const url = new URL(pending.url ?? "");
        assert.equal(`${url.origin}${url.pathname}`, s.authUrl);
        assert.equal(url.searchParams.get("redirect_uri"), callbackFor(`${style}-app`));
        expect.checks(url.searchParams);

        const page = await callback(ctx(), s.authorize(url.href));
        assert.equal(page.statusCode, 200, page.body);
        const done = (
          await send(ctx(), "GET", `/v2/auth/wait/${pending.auth_id}?timeout=5`)
        ).json() as AuthAnswer & { token: string };
        assert.equal(done.status, "completed", JSON.stringify(done));
        assert.ok(s.live(done.token), "the provider's own access token was stored");
        assert.equal(s.grants.authorization_code, 1);

        const list = (await send(ctx(), "GET", `/v2/auth/tokens?user_id=u-${style}`)).json() as TokenRecord[];
        assert.equal(list.length, 1);
        assert.equal(list[0]?.has_refresh_token, expect.refresh);
        assert.equal(list[0]?.token_type, "bearer");
        if (style === "slack")
          assert.deepEqual(list[0]?.scopes, ["users:read", "chat:write"], "the user token's scopes");

        const again = await authenticate(ask);
        assert.equal(again.token, done.token, "the stored token is handed out again");

        if (!expect.refresh) return;
        await ctx().db.orm.execute(
          sql`UPDATE oauth_tokens SET expires_at = now() - interval '1 minute' WHERE id = ${done.token_id ?? ""}`,
        );
        const renewed = await authenticate(ask);
        assert.equal(renewed.status, "completed", JSON.stringify(renewed));
        assert.notEqual(renewed.token, done.token);
        assert.ok(s.live(renewed.token ?? ""));
        assert.equal(renewed.token_id, done.token_id, "renewed in place");
        assert.equal(s.grants.refresh_token, 1);
      });
    }

    it("GitHub: a wrong code is refused though GitHub says so with HTTP 200", async () => {
      const s = standins.get("github");
      assert.ok(s);
      const pending = await authenticate({ provider: "github-app", user_id: "u-bad", scopes: ["repo"] });
      const redirect = s.authorize(pending.url ?? "");
      redirect.searchParams.set("code", "not-a-code");
      const page = await callback(ctx(), redirect);
      assert.equal(page.statusCode, 502, page.body);
      const done = (await send(ctx(), "GET", `/v2/auth/wait/${pending.auth_id}?timeout=5`)).json() as {
        status: string;
        reason?: string;
      };
      assert.equal(done.status, "failed");
      assert.match(done.reason ?? "", /bad_verification_code/);
    });
  },
  { env: LOOPBACK_ENV },
);
