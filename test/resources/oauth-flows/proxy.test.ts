import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { type AuthAnswer, callback, detailLocs, LOOPBACK_ENV, newKey, send } from "../../helpers/oauth.ts";
import { type Standin, startStandin } from "../../helpers/oauth-provider-standins.ts";

const SLUG = "gh";
const USER = "proxy-user";
/** Low enough to reach in a test, with a fresh key per test that counts. */
const RATE_LIMIT = 100;

interface Echo {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body: string;
  token_seen: string;
}

/** A GET over a real connection, the path sent exactly as written. */
async function rawStatus(ctx: TestContext, path: string): Promise<number> {
  if (!ctx.app.server.listening) await ctx.app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = ctx.app.server.address() as AddressInfo;
  return new Promise<number>((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port, path, headers: { "x-api-key": ctx.keys.member } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

forEachDatabase(
  "oauth proxy: calls made with the user's token",
  (suite) => {
    let s: Standin;
    let token: AuthAnswer & { token: string; token_id: string };
    const ctx = (): TestContext => suite.ctx;
    const proxy = (body: Record<string, unknown>, key?: string) =>
      send(ctx(), "POST", `/v2/auth/proxy/${SLUG}`, { user_id: USER, ...body }, key);
    const currentToken = async () => {
      const res = await send(ctx(), "POST", "/v2/auth/authenticate", {
        provider: SLUG,
        user_id: USER,
        scopes: ["repo"],
      });
      return (res.json() as AuthAnswer).token ?? "";
    };
    const refreshes = () => s.grants.refresh_token ?? 0;

    before(async () => {
      s = await startStandin("github");
      const created = await send(ctx(), "POST", "/v2/auth/providers", {
        provider_id: SLUG,
        template: "github",
        client_id: s.clientId,
        client_secret: s.clientSecret,
        auth_url: s.authUrl,
        token_url: s.tokenUrl,
        api_base_url: `${s.origin}/api`,
      });
      assert.equal(created.statusCode, 200, created.body);
      const pending = (
        await send(ctx(), "POST", "/v2/auth/authenticate", {
          provider: SLUG,
          user_id: USER,
          scopes: ["repo"],
        })
      ).json() as AuthAnswer;
      const page = await callback(ctx(), s.authorize(pending.url ?? ""));
      assert.equal(page.statusCode, 200, page.body);
      token = (await send(ctx(), "GET", `/v2/auth/wait/${pending.auth_id}?timeout=5`)).json() as typeof token;
      assert.equal(token.status, "completed");
    });
    after(async () => {
      await s?.close();
    });

    it("JSON form: the call goes to the API base with the user's token; the caller's credentials stay behind", async () => {
      const res = await proxy({
        method: "POST",
        path: "/echo",
        query: { q: "a b", many: ["1", "2"] },
        headers: {
          "X-Api-Key": "sw_should-not-leave",
          Authorization: "Bearer caller-own",
          "X-Tenant-Id": ctx().workspaceId,
          "X-Custom": "kept",
        },
        body: { hello: "world" },
      });
      assert.equal(res.statusCode, 200, res.body);
      const echo = res.json() as Echo;
      assert.equal(echo.method, "POST");
      assert.equal(echo.path, "/api/echo");
      assert.equal(echo.query, "?q=a+b&many=1&many=2");
      assert.equal(echo.headers.authorization, `Bearer ${token.token}`);
      assert.equal(echo.headers["x-custom"], "kept");
      assert.equal(echo.headers["x-api-key"], undefined);
      assert.equal(echo.headers["x-tenant-id"], undefined);
      assert.equal(echo.headers.accept, "application/vnd.github+json", "the template's API header");
      assert.equal(echo.headers["content-type"], "application/json");
      assert.deepEqual(JSON.parse(echo.body), { hello: "world" });
      assert.equal(res.headers["content-type"], "application/json");
    });

    it("pass-through form: method, path, query and body as sent; user_id and agent_id are the proxy's", async () => {
      const res = await ctx().app.inject({
        method: "PUT",
        url: `/v2/auth/proxy/${SLUG}/echo?x=1&user_id=${USER}&y=%2F`,
        headers: {
          "x-api-key": ctx().keys.member,
          "content-type": "text/plain",
          authorization: "Bearer nope",
        },
        payload: "raw body",
      });
      assert.equal(res.statusCode, 200, res.body);
      const echo = res.json() as Echo;
      assert.equal(echo.method, "PUT");
      assert.equal(echo.query, "?x=1&y=%2F");
      assert.equal(echo.body, "raw body");
      assert.equal(echo.headers["content-type"], "text/plain");
      assert.equal(echo.headers.authorization, `Bearer ${token.token}`);
      assert.equal(echo.headers["x-api-key"], undefined);
      assert.ok(!res.body.includes(ctx().keys.member));
    });

    it("never answers with the token, and an unknown user or provider is refused", async () => {
      const noToken = await send(ctx(), "POST", `/v2/auth/proxy/${SLUG}`, {
        user_id: "nobody",
        method: "GET",
        path: "/x",
      });
      assert.equal(noToken.statusCode, 409, noToken.body);
      assert.match(noToken.body, /authenticate/);
      const unknown = await send(ctx(), "POST", "/v2/auth/proxy/nope", { method: "GET", path: "/x" });
      assert.equal(unknown.statusCode, 404);
      const foreign = await send(
        ctx(),
        "POST",
        `/v2/auth/proxy/${SLUG}`,
        { user_id: USER, method: "GET", path: "/x" },
        ctx().other.admin,
      );
      assert.equal(foreign.statusCode, 404, "another organization's provider");
      const ok = await proxy({ method: "GET", path: "/ok" });
      assert.ok(!ok.body.includes(token.token));
      assert.ok(!JSON.stringify(ok.headers).includes(token.token));
    });

    it("whose token: the tenant's (a workspace-bound key sees not the organization's), or an agent's connection", async () => {
      const bound = await send(
        ctx(),
        "POST",
        `/v2/auth/proxy/${SLUG}`,
        { user_id: USER, method: "GET", path: "/echo" },
        ctx().keys.boundMember,
      );
      assert.equal(bound.statusCode, 409, "another tenant's token is not used");
      const none = await proxy({ user_id: undefined, agent_id: "agent-7", method: "GET", path: "/echo" });
      assert.equal(none.statusCode, 409, "no connection and no token of the tenant for this agent");
      const linked = await send(ctx(), "POST", `/v2/auth/agents/agent-7/connections?user_id=${USER}`, {
        oauth_token_id: token.token_id,
      });
      assert.equal(linked.statusCode, 201, linked.body);
      const viaAgent = await send(ctx(), "POST", `/v2/auth/proxy/${SLUG}`, {
        agent_id: "agent-7",
        method: "GET",
        path: "/echo",
      });
      assert.equal(viaAgent.statusCode, 200, viaAgent.body);
      assert.equal((viaAgent.json() as Echo).token_seen, await currentToken(), "the connection's token");
      const passAgent = await ctx().app.inject({
        method: "GET",
        url: `/v2/auth/proxy/${SLUG}/echo?agent_id=agent-7&z=1`,
        headers: { "x-api-key": ctx().keys.member },
      });
      assert.equal(passAgent.statusCode, 200, passAgent.body);
      assert.equal((passAgent.json() as Echo).query, "?z=1", "agent_id is the proxy's");
    });

    it("refreshes before the call when the token expires within 60 s, once for concurrent calls", async () => {
      const before = refreshes();
      await ctx().db.orm.execute(
        sql`UPDATE oauth_tokens SET expires_at = now() + interval '30 seconds' WHERE id = ${token.token_id}::uuid`,
      );
      const answers = await Promise.all([1, 2, 3, 4].map(() => proxy({ method: "GET", path: "/echo" })));
      for (const a of answers) assert.equal(a.statusCode, 200, a.body);
      assert.equal(refreshes(), before + 1, "single-flight");
      const seen = new Set(answers.map((a) => (a.json() as Echo).token_seen));
      assert.equal(seen.size, 1);
      assert.notEqual([...seen][0], token.token, "the renewed token was used");
      assert.equal([...seen][0], await currentToken());
    });

    it("after a 401 it refreshes once and retries once (single-flight across concurrent calls)", async () => {
      const old = await currentToken();
      s.kill(old);
      const before = refreshes();
      const answers = await Promise.all([1, 2, 3].map(() => proxy({ method: "GET", path: "/echo" })));
      for (const a of answers) assert.equal(a.statusCode, 200, a.body);
      assert.equal(refreshes(), before + 1);
      const now = await currentToken();
      assert.notEqual(now, old);
      for (const a of answers) assert.equal((a.json() as Echo).token_seen, now);
    });

    it("a provider's 429 comes back with its Retry-After", async () => {
      const res = await proxy({ method: "GET", path: "/limited" });
      assert.equal(res.statusCode, 429);
      assert.equal(res.headers["retry-after"], "17");
      assert.match(res.body, /API rate limit exceeded/);
    });

    it("follows a redirect on the same host; refuses one to another host (502), which is never called", async () => {
      const same = await proxy({ method: "GET", path: "/redirect-same" });
      assert.equal(same.statusCode, 200, same.body);
      assert.equal((same.json() as Echo).query, "?redirected=1");
      const calls = s.api.calls.length;
      const other = await proxy({ method: "GET", path: "/redirect-other" });
      assert.equal(other.statusCode, 502, other.body);
      assert.match(other.body, /another host/);
      assert.equal(s.api.calls.length, calls + 1, "only the redirecting call reached a server");
    });

    it("streams a large body: the first bytes arrive before the provider has sent the rest", async () => {
      if (!ctx().app.server.listening) await ctx().app.listen({ port: 0, host: "127.0.0.1" });
      const { port } = ctx().app.server.address() as AddressInfo;
      const hash = createHash("sha256");
      let received = 0;
      const done = new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          {
            host: "127.0.0.1",
            port,
            path: `/v2/auth/proxy/${SLUG}/big?user_id=${USER}`,
            headers: { "x-api-key": ctx().keys.member },
          },
          (res) => {
            let first = true;
            res.on("data", (c: Buffer) => {
              received += c.length;
              hash.update(c);
              if (first) {
                first = false;
                // Only now may the provider send the rest.
                s.api.release();
              }
            });
            res.on("end", () => resolve(res.statusCode ?? 0));
            res.on("error", reject);
          },
        );
        req.on("error", reject);
        req.end();
      });
      assert.equal(await done, 200);
      assert.equal(received, s.api.bigSize);
      const expected = createHash("sha256").update(Buffer.alloc(s.api.bigSize, 7)).digest("hex");
      assert.equal(hash.digest("hex"), expected);
    });

    it("a path with .. (plain or encoded) or an absolute URL is 422 and calls nothing", async () => {
      const calls = s.api.calls.length;
      for (const path of [
        "/../secret",
        "/a/../../b",
        "/%2e%2e/x",
        "/a/..%2Fb",
        "https://evil.example/x",
        "//evil.example/x",
        "/a\\b",
      ]) {
        const res = await proxy({ method: "GET", path });
        assert.equal(res.statusCode, 422, `${path}: ${res.body}`);
        assert.deepEqual(detailLocs(res), ["body.path"]);
      }
      // Over a real connection: an in-process client would resolve the segments before sending.
      for (const path of ["%2e%2e/secret", "a/%2E%2E/b", "a/..%2f..%2fb", "a/../b"]) {
        const status = await rawStatus(ctx(), `/v2/auth/proxy/${SLUG}/${path}?user_id=${USER}`);
        assert.equal(status, 422, path);
      }
      assert.equal(s.api.calls.length, calls);
    });

    it("a header value that would split the request (CR LF) is 422", async () => {
      const res = await proxy({
        method: "GET",
        path: "/echo",
        headers: { "X-Evil": "a\r\nHost: evil.example" },
      });
      assert.equal(res.statusCode, 422, res.body);
      assert.deepEqual(detailLocs(res), ["body.headers.X-Evil"]);
      const wide = await proxy({ method: "GET", path: "/echo", headers: { "X-Price": "10 €" } });
      assert.equal(wide.statusCode, 422, "not a header value HTTP carries");
      const ok = await proxy({ method: "GET", path: "/echo", headers: { "X-Tab": "a\tb" } });
      assert.equal(ok.statusCode, 200, ok.body);
    });

    it("a body over the limit is 413, in both forms", async () => {
      const big = "x".repeat(6 * 1024 * 1024);
      const json = await proxy({ method: "POST", path: "/echo", body: big });
      assert.equal(json.statusCode, 413);
      const raw = await ctx().app.inject({
        method: "POST",
        url: `/v2/auth/proxy/${SLUG}/echo?user_id=${USER}`,
        headers: { "x-api-key": ctx().keys.member, "content-type": "application/octet-stream" },
        payload: Buffer.alloc(6 * 1024 * 1024),
      });
      assert.equal(raw.statusCode, 413);
    });

    it("SSRF through api_base_url: refused when stored, and when called (no connection made)", async () => {
      const patch = await send(ctx(), "PATCH", `/v2/auth/providers/${SLUG}`, {
        api_base_url: "https://169.254.169.254/latest",
      });
      assert.equal(patch.statusCode, 422, patch.body);
      // A row that predates the rules (or a name that now resolves elsewhere) is refused at call time.
      await ctx().db.orm.execute(
        sql`UPDATE oauth_providers SET api_base_url = 'https://169.254.169.254/latest' WHERE provider_id = ${SLUG}`,
      );
      try {
        const res = await proxy({ method: "GET", path: "/meta-data" });
        assert.equal(res.statusCode, 502, res.body);
        assert.match(res.body, /refused/);
      } finally {
        await ctx().db.orm.execute(
          sql`UPDATE oauth_providers SET api_base_url = ${`${s.origin}/api`} WHERE provider_id = ${SLUG}`,
        );
      }
    });

    it("calls count against the key's rate limit; Slipway's own 429 is not the provider's", async () => {
      const { key } = await newKey(ctx());
      const calls = s.api.calls.length;
      let limited: Awaited<ReturnType<typeof proxy>> | undefined;
      for (let i = 0; i <= RATE_LIMIT; i++) {
        const res = await proxy({ method: "GET", path: "/ok" }, key);
        if (res.statusCode === 429) {
          limited = res;
          break;
        }
        assert.equal(res.statusCode, 200, res.body);
      }
      assert.ok(limited, "limited");
      assert.match(limited.body, /Rate limit of 100 requests a minute for this API key/);
      assert.ok(limited.headers["retry-after"]);
      assert.equal(s.api.calls.length, calls + RATE_LIMIT, "the limited call reached no provider");
    });

    it("a viewer key makes no calls, in either form", async () => {
      const pass = await ctx().app.inject({
        method: "GET",
        url: `/v2/auth/proxy/${SLUG}/echo?user_id=${USER}`,
        headers: { "x-api-key": ctx().keys.viewer },
      });
      assert.equal(pass.statusCode, 403, pass.body);
    });

    authMatrix(suite, {
      method: "GET",
      url: () => `/v2/auth/proxy/${SLUG}/ok?user_id=${USER}`,
      role: "member",
      otherTenantUrl: () => "/v2/auth/proxy/not-this-orgs/ok",
    });

    authMatrix(suite, {
      method: "POST",
      url: () => `/v2/auth/proxy/${SLUG}`,
      payload: () => ({ user_id: USER, method: "GET", path: "/ok" }),
      otherTenantUrl: () => "/v2/auth/proxy/not-this-orgs",
    });
  },
  { env: { ...LOOPBACK_ENV, SLIPWAY_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT) } },
);
