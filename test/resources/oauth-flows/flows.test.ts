import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import { encryptionContext } from "../../../src/crypto/envelope.ts";
import { rows } from "../../../src/db/client.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { callback, callbackFor, LOOPBACK_ENV, send, sleep } from "../../helpers/oauth.ts";
import { type ClientSpec, closedPort, type OidcServer, startOidcServer } from "../../helpers/oidc-server.ts";

type Method = "client_secret_post" | "client_secret_basic" | "none";
interface Combo {
  slug: string;
  method: Method;
  pkce: boolean;
  secret: string | null;
}

const secretFor = (slug: string) => `secret-${slug}-${randomBytes(12).toString("hex")}`;
const COMBOS: Combo[] = [
  { slug: "post-pkce", method: "client_secret_post", pkce: true },
  { slug: "post-no-pkce", method: "client_secret_post", pkce: false },
  { slug: "basic-pkce", method: "client_secret_basic", pkce: true },
  { slug: "basic-no-pkce", method: "client_secret_basic", pkce: false },
  { slug: "public-pkce", method: "none", pkce: true },
].map((c) => ({ ...c, method: c.method as Method, secret: c.method === "none" ? null : secretFor(c.slug) }));
/** Extra providers: one whose token endpoint is down, one for the other organization. */
const DOWN = { slug: "down", secret: secretFor("down") };
const OTHER = { slug: "other-org", secret: secretFor("other-org") };

interface AuthResult {
  status: string;
  url?: string;
  auth_id?: string;
  token?: string;
  token_id?: string;
  token_type?: string;
  expires_at?: string | null;
  scopes?: string[];
  reason?: string;
}

interface TokenRecord {
  id: string;
  provider_id: string;
  user_id: string;
  workspace_id: string | null;
  agent_id: string | null;
  scopes: string[];
  has_refresh_token: boolean;
  expires_at: string | null;
}

const clientOf = (slug: string) => `client-${slug}`;

forEachDatabase(
  "oauth flows",
  (suite) => {
    let oidc: OidcServer;
    /** Every secret value the suite saw: none may show up in logs or API answers. */
    const secrets: string[] = [
      ...COMBOS.flatMap((c) => (c.secret ? [c.secret] : [])),
      DOWN.secret,
      OTHER.secret,
    ];
    const completed = new Map<string, AuthResult>();

    const authenticate = async (body: Record<string, unknown>, key?: string): Promise<AuthResult> => {
      const res = await send(suite.ctx, "POST", "/v2/auth/authenticate", body, key);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as AuthResult;
    };
    const wait = async (authId: string, timeout = 5, key?: string): Promise<AuthResult> => {
      const res = await send(suite.ctx, "GET", `/v2/auth/wait/${authId}?timeout=${timeout}`, undefined, key);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as AuthResult;
    };
    const tokensOf = async (userId: string, query = ""): Promise<TokenRecord[]> => {
      const res = await send(suite.ctx, "GET", `/v2/auth/tokens?user_id=${userId}${query}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as TokenRecord[];
    };
    /** authenticate → browser → callback → wait; returns the completed result. */
    const fullFlow = async (body: Record<string, unknown>): Promise<AuthResult> => {
      const pending = await authenticate(body);
      assert.equal(pending.status, "pending", JSON.stringify(pending));
      const page = await callback(suite.ctx, await oidc.authorize(pending.url ?? ""));
      assert.equal(page.statusCode, 200, page.body);
      const done = await wait(pending.auth_id ?? "");
      assert.equal(done.status, "completed", JSON.stringify(done));
      if (done.token) secrets.push(done.token);
      return done;
    };

    before(async () => {
      const ctx = suite.ctx;
      const clients: ClientSpec[] = [
        ...COMBOS.map((c) => ({
          client_id: clientOf(c.slug),
          ...(c.secret === null ? {} : { client_secret: c.secret }),
          token_endpoint_auth_method: c.method,
          redirect_uris: [callbackFor(c.slug)],
        })),
        {
          client_id: clientOf(DOWN.slug),
          client_secret: DOWN.secret,
          token_endpoint_auth_method: "client_secret_post",
          redirect_uris: [callbackFor(DOWN.slug)],
        },
        {
          client_id: clientOf(OTHER.slug),
          client_secret: OTHER.secret,
          token_endpoint_auth_method: "client_secret_post",
          redirect_uris: [callbackFor(OTHER.slug)],
        },
      ];
      oidc = await startOidcServer({ clients, accessTokenTtl: 4 });
      const create = async (body: Record<string, unknown>, key = ctx.keys.member) => {
        const res = await send(ctx, "POST", "/v2/auth/providers", body, key);
        assert.equal(res.statusCode, 200, res.body);
      };
      for (const c of COMBOS) {
        await create({
          provider_id: c.slug,
          name: `Provider ${c.slug}`,
          client_id: clientOf(c.slug),
          client_secret: c.secret,
          auth_url: oidc.authUrl,
          token_url: oidc.tokenUrl,
          uses_pkce: c.pkce,
          token_endpoint_auth_method: c.method,
        });
      }
      await create({
        provider_id: DOWN.slug,
        name: "Token endpoint down",
        client_id: clientOf(DOWN.slug),
        client_secret: DOWN.secret,
        auth_url: oidc.authUrl,
        token_url: `http://127.0.0.1:${await closedPort()}/token`,
      });
      await create(
        {
          provider_id: OTHER.slug,
          name: "Other organization's",
          client_id: clientOf(OTHER.slug),
          client_secret: OTHER.secret,
          auth_url: oidc.authUrl,
          token_url: oidc.tokenUrl,
        },
        ctx.other.admin,
      );
    });
    after(async () => {
      await oidc?.close();
    });

    for (const c of COMBOS) {
      it(`whole flow with ${c.method}, ${c.pkce ? "with" : "without"} PKCE`, async () => {
        const ask = { user_id: "user-1", provider: c.slug, scopes: ["openid", "profile"] };
        const pending = await authenticate(ask);
        assert.equal(pending.status, "pending");
        assert.match(pending.auth_id ?? "", /^[0-9a-f-]{36}$/);
        const url = new URL(pending.url ?? "");
        assert.equal(`${url.origin}${url.pathname}`, oidc.authUrl);
        assert.equal(url.searchParams.get("response_type"), "code");
        assert.equal(url.searchParams.get("client_id"), clientOf(c.slug));
        assert.equal(url.searchParams.get("redirect_uri"), callbackFor(c.slug));
        assert.equal(url.searchParams.get("scope"), "openid profile");
        assert.ok((url.searchParams.get("state") ?? "").length >= 32);
        assert.equal(url.searchParams.get("code_challenge_method"), c.pkce ? "S256" : null);
        assert.equal(url.searchParams.has("code_challenge"), c.pkce);

        const redirect = await oidc.authorize(url.href);
        assert.ok(redirect.searchParams.get("code"));
        const page = await callback(suite.ctx, redirect);
        assert.equal(page.statusCode, 200, page.body);
        assert.match(String(page.headers["content-type"]), /^text\/html/);
        assert.match(page.body, /close this window/);

        const done = await wait(pending.auth_id ?? "");
        assert.equal(done.status, "completed");
        assert.equal(done.auth_id, pending.auth_id);
        assert.ok(done.token);
        secrets.push(done.token);
        assert.deepEqual(done.scopes?.slice().sort(), ["openid", "profile"]);
        assert.ok(done.expires_at);
        assert.equal(await oidc.userinfo(done.token), 200, "the provider accepts the stored token");
        assert.equal(oidc.grantCount(clientOf(c.slug), "authorization_code"), 1);

        const again = await authenticate(ask);
        assert.equal(again.status, "completed", "no new flow while the token is valid");
        assert.equal(again.token, done.token);
        assert.equal(again.token_id, done.token_id);
        const narrower = await authenticate({ ...ask, scopes: ["openid"] });
        assert.equal(narrower.token, done.token, "a subset of the granted scopes is covered");
        assert.equal(oidc.grantCount(clientOf(c.slug), "refresh_token"), 0);
        completed.set(c.slug, done);
      });
    }

    it("after expiry each token is refreshed once, even by concurrent callers", async () => {
      assert.equal(completed.size, COMBOS.length, "the whole-flow tests ran first");
      // Tokens are renewed once half their (4 s) lifetime is gone: wait for that, from the answers.
      const due = Math.max(
        ...[...completed.values()].map((d) => Date.parse(d.expires_at ?? "") - 2000 + 100),
      );
      await sleep(Math.max(0, due - Date.now()));
      for (const c of COMBOS) {
        const before = completed.get(c.slug) as AuthResult;
        const ask = { user_id: "user-1", provider: c.slug, scopes: ["openid", "profile"] };
        const answers = await Promise.all([1, 2, 3, 4].map(() => authenticate(ask)));
        for (const a of answers) {
          assert.equal(a.status, "completed");
          assert.equal(a.token_id, before.token_id, "the same stored token, renewed");
          assert.equal(a.token, answers[0]?.token, "every caller gets the one new token");
        }
        const fresh = answers[0] as AuthResult;
        assert.notEqual(fresh.token, before.token);
        secrets.push(fresh.token ?? "");
        assert.equal(oidc.grantCount(clientOf(c.slug), "refresh_token"), 1, `${c.slug}: one refresh`);
        assert.equal(await oidc.userinfo(fresh.token ?? ""), 200);
        assert.ok(Date.parse(fresh.expires_at ?? "") > Date.parse(before.expires_at ?? ""));
      }
    });

    it("tokens are stored encrypted", async () => {
      const ctx = suite.ctx;
      const stored = await rows<{ id: string; access_token_enc: string; refresh_token_enc: string | null }>(
        ctx.db.orm,
        sql`SELECT id::text AS id, access_token_enc, refresh_token_enc FROM oauth_tokens`,
      );
      assert.ok(stored.length >= COMBOS.length);
      const dump = JSON.stringify(stored);
      for (const s of secrets) assert.ok(!dump.includes(s), "no token in the clear");
      const first = stored[0] as (typeof stored)[number];
      assert.match(first.access_token_enc, /^sw1\./);
      assert.ok(first.refresh_token_enc?.startsWith("sw1."));
      const plain = ctx.keyring.decrypt(
        first.access_token_enc,
        encryptionContext("oauth_tokens", "access_token_enc", first.id),
      );
      assert.ok(secrets.includes(plain));
      const providers = JSON.stringify(await rows(ctx.db.orm, sql`SELECT * FROM oauth_providers`));
      for (const c of COMBOS)
        if (c.secret) assert.ok(!providers.includes(c.secret), "no client secret in the clear");
    });

    it("more scopes start a new flow asking for the old ones too, and keep the token's id", async () => {
      const before = await authenticate({ user_id: "user-1", provider: "post-pkce", scopes: ["openid"] });
      const pending = await authenticate({
        user_id: "user-1",
        provider: "post-pkce",
        scopes: ["openid", "email"],
      });
      assert.equal(pending.status, "pending");
      const asked = new URL(pending.url ?? "").searchParams.get("scope")?.split(" ").sort();
      assert.deepEqual(asked, ["email", "openid", "profile"]);
      await callback(suite.ctx, await oidc.authorize(pending.url ?? ""));
      const done = await wait(pending.auth_id ?? "");
      assert.equal(done.status, "completed");
      secrets.push(done.token ?? "");
      assert.equal(done.token_id, before.token_id);
      assert.deepEqual(done.scopes?.slice().sort(), ["email", "openid", "profile"]);
    });

    it("tokens are per user and per agent", async () => {
      const other = await authenticate({ user_id: "user-2", provider: "post-pkce", scopes: ["openid"] });
      assert.equal(other.status, "pending");
      const agent = await authenticate({
        user_id: "user-1",
        provider: "post-pkce",
        scopes: ["openid"],
        agent_id: "agent-7",
      });
      assert.equal(agent.status, "pending");
      const done = await fullFlow({
        user_id: "user-1",
        provider: "basic-pkce",
        scopes: ["openid"],
        agent_id: "agent-7",
      });
      const list = await tokensOf("user-1", "&provider=basic-pkce");
      assert.deepEqual(list.map((t) => t.agent_id).sort(), ["agent-7", null].sort());
      const forAgent = await tokensOf("user-1", "&agent_id=agent-7");
      assert.deepEqual(
        forAgent.map((t) => t.id),
        [done.token_id],
      );
    });

    it("wait: long poll wakes when the callback completes the flow", async () => {
      const pending = await authenticate({ user_id: "user-3", provider: "public-pkce", scopes: ["openid"] });
      const waiting = send(suite.ctx, "GET", `/v2/auth/wait/${pending.auth_id}?timeout=30`);
      const page = await callback(suite.ctx, await oidc.authorize(pending.url ?? ""));
      assert.equal(page.statusCode, 200);
      const done = (await waiting).json() as AuthResult;
      assert.equal(done.status, "completed");
      secrets.push(done.token ?? "");
    });

    it("wait: pending, timeout, not_found, another organization's flow, bad input", async () => {
      const ctx = suite.ctx;
      const pending = await authenticate({ user_id: "user-4", provider: "post-pkce", scopes: ["openid"] });
      const id = pending.auth_id ?? "";
      assert.deepEqual(await wait(id, 0), { status: "pending", auth_id: id });
      assert.deepEqual(await wait(id, 1), { status: "timeout", auth_id: id });
      const unknown = randomUUID();
      assert.deepEqual(await wait(unknown, 0), { status: "not_found", auth_id: unknown });
      assert.deepEqual(await wait(id, 0, ctx.other.admin), { status: "not_found", auth_id: id });
      for (const q of ["timeout=61", "timeout=-1", "timeout=abc"]) {
        const res = await send(ctx, "GET", `/v2/auth/wait/${id}?${q}`);
        assert.equal(res.statusCode, 422, q);
        assert.deepEqual(
          (res.json() as { detail: { loc: string[] }[] }).detail.map((d) => d.loc.join(".")),
          ["query.timeout"],
        );
      }
      const bad = await send(ctx, "GET", "/v2/auth/wait/not-a-uuid?timeout=0");
      assert.equal(bad.statusCode, 422);
    });

    it("callback: wrong state is refused and changes nothing", async () => {
      const ctx = suite.ctx;
      const pending = await authenticate({ user_id: "user-5", provider: "post-pkce", scopes: ["openid"] });
      const redirect = await oidc.authorize(pending.url ?? "");
      const forged = new URL(redirect.href);
      forged.searchParams.set("state", randomBytes(32).toString("base64url"));
      const page = await callback(ctx, forged);
      assert.equal(page.statusCode, 400);
      assert.match(page.body, /not valid or was already used/);
      assert.equal((await wait(pending.auth_id ?? "", 0)).status, "pending", "the real flow is untouched");
      const noState = new URL(redirect.href);
      noState.searchParams.delete("state");
      assert.equal((await callback(ctx, noState)).statusCode, 400);
      assert.deepEqual(await tokensOf("user-5"), []);
      // The real redirect still works afterwards.
      assert.equal((await callback(ctx, redirect)).statusCode, 200);
      assert.equal((await wait(pending.auth_id ?? "", 0)).status, "completed");
    });

    it("callback: a replayed state is refused and the flow keeps its result", async () => {
      const ctx = suite.ctx;
      const pending = await authenticate({
        user_id: "user-6",
        provider: "basic-no-pkce",
        scopes: ["openid"],
      });
      const redirect = await oidc.authorize(pending.url ?? "");
      assert.equal((await callback(ctx, redirect)).statusCode, 200);
      const before = await wait(pending.auth_id ?? "", 0);
      secrets.push(before.token ?? "");
      const replay = await callback(ctx, redirect);
      assert.equal(replay.statusCode, 400);
      assert.match(replay.body, /already used/);
      const after = await wait(pending.auth_id ?? "", 0);
      assert.equal(after.status, "completed");
      assert.equal(after.token, before.token);
      assert.equal(oidc.grantCount(clientOf("basic-no-pkce"), "authorization_code"), 2, "no second exchange");
    });

    it("callback: the state of one provider is refused on another provider's callback", async () => {
      const ctx = suite.ctx;
      const pending = await authenticate({ user_id: "user-7", provider: "post-pkce", scopes: ["openid"] });
      const redirect = await oidc.authorize(pending.url ?? "");
      const elsewhere = new URL(redirect.href);
      elsewhere.pathname = "/v2/auth/callback/basic-pkce";
      const page = await callback(ctx, elsewhere);
      assert.equal(page.statusCode, 400);
      const failed = await wait(pending.auth_id ?? "", 0);
      assert.equal(failed.status, "failed");
      assert.match(failed.reason ?? "", /another provider/);
      assert.deepEqual(await tokensOf("user-7"), []);
    });

    it("callback: a provider error is shown (escaped) and wait reports it; nothing is stored", async () => {
      const ctx = suite.ctx;
      const pending = await authenticate({ user_id: "user-8", provider: "post-pkce", scopes: ["openid"] });
      const redirect = await oidc.authorize(pending.url ?? "", { deny: true });
      assert.equal(redirect.searchParams.get("error"), "access_denied");
      const page = await callback(ctx, redirect);
      assert.equal(page.statusCode, 400);
      assert.match(page.body, /access_denied/);
      assert.ok(page.body.includes("&lt;b&gt;declined&lt;/b&gt;"), "the provider's text is escaped");
      assert.ok(!page.body.includes("<b>declined"), page.body);
      const failed = await wait(pending.auth_id ?? "", 0);
      assert.equal(failed.status, "failed");
      assert.match(failed.reason ?? "", /access_denied/);
      assert.deepEqual(await tokensOf("user-8"), []);
      // A hand-made error with markup is escaped too.
      const again = await authenticate({ user_id: "user-8", provider: "post-pkce", scopes: ["openid"] });
      const state = new URL(again.url ?? "").searchParams.get("state") ?? "";
      const crafted = new URL(callbackFor("post-pkce"));
      crafted.search = new URLSearchParams({ state, error: "<script>alert(1)</script>" }).toString();
      const crafted_page = await callback(ctx, crafted);
      assert.equal(crafted_page.statusCode, 400);
      assert.ok(!crafted_page.body.includes("<script>"));
      assert.match(String(crafted_page.headers["content-security-policy"]), /default-src 'none'/);
    });

    it("flows expire: wait reports it, and a late callback is refused without storing anything", async () => {
      const ctx = suite.ctx;
      const pending = await authenticate({ user_id: "user-12", provider: "post-pkce", scopes: ["openid"] });
      const redirect = await oidc.authorize(pending.url ?? "");
      await ctx.db.orm.execute(
        sql`UPDATE oauth_flows SET expires_at = now() - interval '1 second' WHERE id = ${pending.auth_id ?? ""}::uuid`,
      );
      const late = await wait(pending.auth_id ?? "", 0);
      assert.equal(late.status, "failed");
      assert.match(late.reason ?? "", /not completed in time/);
      const page = await callback(ctx, redirect);
      assert.equal(page.statusCode, 400);
      assert.match(page.body, /expired/);
      const failed = await wait(pending.auth_id ?? "", 0);
      assert.equal(failed.status, "failed");
      assert.match(failed.reason ?? "", /expired/);
      assert.deepEqual(await tokensOf("user-12"), []);
    });

    it("callback: token endpoint down → clear page, flow failed, nothing stored", async () => {
      const ctx = suite.ctx;
      const pending = await authenticate({ user_id: "user-9", provider: DOWN.slug, scopes: ["openid"] });
      const page = await callback(ctx, await oidc.authorize(pending.url ?? ""));
      assert.equal(page.statusCode, 502);
      assert.match(page.body, /token endpoint could not be reached/);
      assert.match(page.body, /connection refused/);
      const failed = await wait(pending.auth_id ?? "", 5);
      assert.equal(failed.status, "failed");
      assert.match(failed.reason ?? "", /token endpoint could not be reached/);
      assert.equal(failed.token, undefined);
      assert.deepEqual(await tokensOf("user-9"), []);
      const stored = await rows<{ n: number }>(
        ctx.db.orm,
        sql`SELECT count(*)::int AS n FROM oauth_tokens WHERE user_id = 'user-9'`,
      );
      assert.equal(stored[0]?.n, 0);
    });

    it("refresh: a refresh token the provider no longer accepts: kept as broken with the reason, exists false, a new flow repairs it", async () => {
      const ctx = suite.ctx;
      const done = await fullFlow({ user_id: "user-10", provider: "post-no-pkce", scopes: ["openid"] });
      const id = done.token_id ?? "";
      // The stored refresh token is replaced by one the provider never issued, and the access token is made due.
      const bogus = ctx.keyring.encrypt(
        "not-a-real-refresh-token",
        encryptionContext("oauth_tokens", "refresh_token_enc", id),
      );
      await ctx.db.orm.execute(
        sql`UPDATE oauth_tokens SET refresh_token_enc = ${bogus}, expires_at = now() - interval '1 minute',
                   issued_at = now() - interval '1 hour' WHERE id = ${id}::uuid`,
      );
      const next = await authenticate({ user_id: "user-10", provider: "post-no-pkce", scopes: ["openid"] });
      assert.equal(next.status, "pending");
      const kept = (await tokensOf("user-10", "&include_status=true")) as (TokenRecord & {
        status?: string;
        broken_reason?: string | null;
        last_error?: string | null;
      })[];
      assert.equal(kept.length, 1, "the dead token is kept, so people can see why");
      assert.equal(kept[0]?.id, id);
      assert.equal(kept[0]?.status, "broken");
      assert.match(kept[0]?.broken_reason ?? "", /invalid_grant/);
      assert.equal(kept[0]?.last_error, kept[0]?.broken_reason);
      const exists = await send(
        ctx,
        "GET",
        "/v2/auth/tokens/exists?provider_id=post-no-pkce&user_id=user-10",
      );
      assert.deepEqual(exists.json(), { has_token: false });
      // Finishing the new flow renews the same token, no longer broken.
      const page = await callback(ctx, await oidc.authorize(next.url ?? ""));
      assert.equal(page.statusCode, 200, page.body);
      const done2 = await wait(next.auth_id ?? "");
      assert.equal(done2.status, "completed");
      assert.equal(done2.token_id, id, "repaired in place");
      const repaired = (await tokensOf("user-10", "&include_status=true")) as { status?: string }[];
      assert.equal(repaired[0]?.status, "ok");
      assert.deepEqual(
        (await send(ctx, "GET", "/v2/auth/tokens/exists?provider_id=post-no-pkce&user_id=user-10")).json(),
        { has_token: true },
      );
    });

    it("refresh: token endpoint down → 502, and the token is kept", async () => {
      const ctx = suite.ctx;
      const done = await fullFlow({ user_id: "user-11", provider: "basic-pkce", scopes: ["openid"] });
      await ctx.db.orm.execute(
        sql`UPDATE oauth_tokens SET expires_at = now() - interval '1 minute', issued_at = now() - interval '1 hour'
             WHERE id = ${done.token_id ?? ""}::uuid`,
      );
      const tokenUrl = oidc.tokenUrl;
      const patch = await send(ctx, "PATCH", "/v2/auth/providers/basic-pkce", {
        token_url: `http://127.0.0.1:${await closedPort()}/token`,
      });
      assert.equal(patch.statusCode, 200, patch.body);
      const res = await send(ctx, "POST", "/v2/auth/authenticate", {
        user_id: "user-11",
        provider: "basic-pkce",
        scopes: ["openid"],
      });
      assert.equal(res.statusCode, 502, res.body);
      assert.match(res.body, /could not be reached/);
      assert.equal((await tokensOf("user-11")).length, 1);
      const [kept] = (await tokensOf("user-11", "&include_status=true")) as {
        status?: string;
        last_error?: string | null;
        last_error_at?: string | null;
        last_refreshed_at?: string | null;
      }[];
      assert.equal(kept?.status, "ok", "not broken: the provider was only out of reach");
      assert.match(kept?.last_error ?? "", /could not be reached/);
      assert.ok(kept?.last_error_at);
      assert.equal(
        (await send(ctx, "PATCH", "/v2/auth/providers/basic-pkce", { token_url: tokenUrl })).statusCode,
        200,
      );
      const renewed = await authenticate({ user_id: "user-11", provider: "basic-pkce", scopes: ["openid"] });
      assert.equal(renewed.status, "completed");
      assert.equal(renewed.token_id, done.token_id);
      secrets.push(renewed.token ?? "");
      const [after] = (await tokensOf("user-11", "&include_status=true")) as {
        last_refreshed_at?: string | null;
      }[];
      assert.ok(after?.last_refreshed_at, "the refresh is recorded");
    });

    it("authenticate: validation", async () => {
      const ctx = suite.ctx;
      const cases: [Record<string, unknown>, string][] = [
        [{ user_id: "u", provider: "nope", scopes: [] }, "body.provider"],
        [{ user_id: "u", provider: OTHER.slug, scopes: [] }, "body.provider"],
        [{ user_id: "", provider: "post-pkce", scopes: [] }, "body.user_id"],
        [{ user_id: "u", provider: "post-pkce" }, "body.scopes"],
        [{ user_id: "u", provider: "post-pkce", scopes: "openid" }, "body.scopes"],
        [{ user_id: "u", provider: "post-pkce", scopes: ["open id"] }, "body.scopes.0"],
        [{ user_id: "u", provider: "post-pkce", scopes: ["openid", 'a"b'] }, "body.scopes.1"],
        [{ user_id: "u", provider: "post-pkce", scopes: [], agent_id: "" }, "body.agent_id"],
        [{ user_id: "u", provider: "post-pkce", scopes: [], agent_id: "a/b" }, "body.agent_id"],
        [{ user_id: "u\u0000", provider: "post-pkce", scopes: [] }, "body.user_id"],
        [{ user_id: "u", provider: "post-pkce", scopes: [], token_id: "nope" }, "body.token_id"],
        [{ user_id: "u", provider: "post-pkce", scopes: [], token_id: randomUUID() }, "body.token_id"],
        [{ user_id: "u", provider: "post-pkce", scopes: [], force_new: "yes" }, "body.force_new"],
        [{ user_id: "u", provider: "Bad Slug", scopes: [] }, "body.provider"],
      ];
      for (const [body, loc] of cases) {
        const res = await send(ctx, "POST", "/v2/auth/authenticate", body);
        assert.equal(res.statusCode, 422, `${JSON.stringify(body)}: ${res.body}`);
        const locs = (res.json() as { detail: { loc: (string | number)[] }[] }).detail.map((d) =>
          d.loc.join("."),
        );
        assert.ok(locs.includes(loc), `${JSON.stringify(body)} → ${locs.join(", ")}`);
      }
      const flows = await rows<{ n: number }>(
        ctx.db.orm,
        sql`SELECT count(*)::int AS n FROM oauth_flows WHERE user_id = 'u'`,
      );
      assert.equal(flows[0]?.n, 0, "bad input starts no flow");
    });

    it("tokens: list without values, filters, organization isolation, delete", async () => {
      const ctx = suite.ctx;
      const list = await tokensOf("user-1");
      assert.ok(list.length >= COMBOS.length);
      const raw = JSON.stringify(list);
      for (const s of secrets) assert.ok(!raw.includes(s), "no token value in the listing");
      for (const t of list) {
        assert.deepEqual(Object.keys(t).sort(), [
          "agent_id",
          "created_at",
          "expires_at",
          "has_refresh_token",
          "id",
          "is_default",
          "provider_account_label",
          "provider_id",
          "scopes",
          "token_type",
          "updated_at",
          "user_id",
          "workspace_id",
        ]);
        assert.equal(t.workspace_id, null, "the organization's: an organization-level key obtained it");
        assert.equal(t.has_refresh_token, true);
      }
      const onePost = await tokensOf("user-1", "&provider=post-no-pkce");
      assert.equal(onePost.length, 1);
      assert.equal(onePost[0]?.provider_id, "post-no-pkce");
      const viewerList = await send(ctx, "GET", "/v2/auth/tokens?user_id=user-1", undefined, ctx.keys.viewer);
      assert.equal(viewerList.statusCode, 200);
      const otherList = await send(ctx, "GET", "/v2/auth/tokens?user_id=user-1", undefined, ctx.other.admin);
      assert.deepEqual(otherList.json(), []);
      const all = await send(ctx, "GET", "/v2/auth/tokens");
      assert.equal(all.statusCode, 200, "without user_id: every token of the tenant");
      const users = new Set((all.json() as TokenRecord[]).map((t) => t.user_id));
      assert.ok(users.has("user-1") && users.has("user-11"), [...users].join());

      const target = onePost[0] as TokenRecord;
      const url = `/v2/auth/tokens/${target.id}?user_id=user-1`;
      const foreign = await send(ctx, "DELETE", url, undefined, ctx.other.admin);
      assert.equal(foreign.statusCode, 404);
      const notOwner = await send(ctx, "DELETE", `/v2/auth/tokens/${target.id}?user_id=user-2`);
      assert.equal(notOwner.statusCode, 404, "another user's token is not found when a user is named");
      const del = await send(ctx, "DELETE", url);
      assert.equal(del.statusCode, 204, del.body);
      assert.equal(del.body, "");
      assert.equal((await send(ctx, "DELETE", url)).statusCode, 404);
      assert.equal((await send(ctx, "DELETE", "/v2/auth/tokens/not-a-uuid")).statusCode, 422);
      const next = await authenticate({ user_id: "user-1", provider: "post-no-pkce", scopes: ["openid"] });
      assert.equal(next.status, "pending", "a forgotten token means a new flow");
    });

    it("another organization's provider runs its own flows", async () => {
      const ctx = suite.ctx;
      const pending = await authenticate(
        { user_id: "user-1", provider: OTHER.slug, scopes: ["openid"] },
        ctx.other.admin,
      );
      await callback(ctx, await oidc.authorize(pending.url ?? ""));
      const done = await wait(pending.auth_id ?? "", 5, ctx.other.admin);
      assert.equal(done.status, "completed");
      secrets.push(done.token ?? "");
      assert.equal(
        (await wait(pending.auth_id ?? "", 0)).status,
        "not_found",
        "invisible to the first organization",
      );
      assert.ok(!(await tokensOf("user-1")).some((t) => t.provider_id === OTHER.slug));
    });

    it("deleting a provider deletes its tokens", async () => {
      const ctx = suite.ctx;
      const before = (await tokensOf("user-1")).filter((t) => t.provider_id === "public-pkce");
      assert.equal(before.length, 1);
      assert.equal((await send(ctx, "DELETE", "/v2/auth/providers/public-pkce")).statusCode, 200);
      assert.ok(!(await tokensOf("user-1")).some((t) => t.provider_id === "public-pkce"));
    });

    it("no secret, token or verifier appears in the logs or the callback pages", async () => {
      const logs = suite.ctx.readLogs();
      assert.ok(logs.length > 0, "the suite logged");
      for (const s of secrets) {
        assert.ok(s.length > 10);
        assert.ok(!logs.includes(s), "a secret value leaked into the logs");
      }
      assert.ok(!/[?&]code=/.test(logs), "authorization codes are not logged");
    });

    const matrixBody = () => ({ user_id: "m", provider: "post-pkce", scopes: ["openid"] });
    authMatrix(suite, { method: "POST", url: () => "/v2/auth/authenticate", payload: matrixBody });
    authMatrix(suite, { method: "GET", url: () => `/v2/auth/wait/${randomUUID()}?timeout=0` });
    authMatrix(suite, { method: "GET", url: () => "/v2/auth/tokens?user_id=user-1" });
    authMatrix(suite, {
      method: "DELETE",
      url: async (ctx: TestContext) => {
        const list = (await send(ctx, "GET", "/v2/auth/tokens?user_id=user-1")).json() as TokenRecord[];
        return `/v2/auth/tokens/${list[0]?.id ?? randomUUID()}?user_id=user-1`;
      },
      otherTenantUrl: async (ctx: TestContext) => {
        const list = (
          await send(ctx, "GET", "/v2/auth/tokens?user_id=user-1", undefined, ctx.other.admin)
        ).json() as TokenRecord[];
        assert.ok(list[0], "the other organization has a token");
        return `/v2/auth/tokens/${list[0].id}?user_id=user-1`;
      },
    });
  },
  { env: LOOPBACK_ENV },
);
