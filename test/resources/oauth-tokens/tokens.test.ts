// Why over 300 lines: one suite per database covers revocation (each way a provider answers), tenancy, metadata, authenticate picks and the Slack routes on a shared provider.
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import { encryptionContext } from "../../../src/crypto/envelope.ts";
import { rows } from "../../../src/db/client.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import {
  authenticateAs,
  clientSpec,
  createProviderFor,
  detailLocs,
  LOOPBACK_ENV,
  newKey,
  obtainToken,
  send,
  type TokenSummary,
} from "../../helpers/oauth.ts";
import { closedPort, type OidcServer, startOidcServer } from "../../helpers/oidc-server.ts";

const client = (slug: string) => ({ slug, secret: `secret-${slug}-${randomBytes(12).toString("hex")}` });
const MAIN = client("tok");
const SECOND = client("tok-two");
const SLACK = client("slack-team");

/** The stored refresh token of a token row, in the clear (to try it at the provider). */
async function storedRefreshToken(ctx: TestContext, id: string): Promise<string> {
  const [row] = await rows<{ refresh_token_enc: string }>(
    ctx.db.orm,
    sql`SELECT refresh_token_enc FROM oauth_tokens WHERE id = ${id}::uuid`,
  );
  assert.ok(row, "the token is stored");
  return ctx.keyring.decrypt(
    row.refresh_token_enc,
    encryptionContext("oauth_tokens", "refresh_token_enc", id),
  );
}

async function tokenCount(ctx: TestContext, id: string): Promise<number> {
  const [row] = await rows<{ n: number }>(
    ctx.db.orm,
    sql`SELECT count(*)::int AS n FROM oauth_tokens WHERE id = ${id}::uuid`,
  );
  return row?.n ?? -1;
}

forEachDatabase(
  "oauth tokens",
  (suite) => {
    let oidc: OidcServer;
    const list = async (key: string, query = ""): Promise<TokenSummary[]> => {
      const res = await send(suite.ctx, "GET", `/v2/auth/tokens${query}`, undefined, key);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as TokenSummary[];
    };
    /** Whether the provider still accepts a refresh token (its token endpoint). */
    const refreshAccepted = async (c: { slug: string; secret: string }, refreshToken: string) => {
      const res = await fetch(oidc.tokenUrl, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "refresh_token",
          refresh_token: refreshToken,
          client_id: `client-${c.slug}`,
          client_secret: c.secret,
        }),
      });
      await res.arrayBuffer();
      return res.status;
    };
    const ask = (extra: Record<string, unknown> = {}) => ({
      provider: MAIN.slug,
      scopes: ["openid"],
      ...extra,
    });
    /** An end user of this test alone: the tenant's tokens narrowed to theirs. */
    const newUser = () => {
      const id = `user-${randomUUID()}`;
      return {
        id,
        ask: (extra: Record<string, unknown> = {}) => ask({ user_id: id, ...extra }),
        q: `?user_id=${id}`,
      };
    };

    before(async () => {
      const ctx = suite.ctx;
      oidc = await startOidcServer({ clients: [MAIN, SECOND, SLACK].map(clientSpec) });
      await createProviderFor(ctx, oidc, MAIN);
      await createProviderFor(ctx, oidc, SECOND);
      await createProviderFor(ctx, oidc, SLACK, { provider_type: "slack" });
    });
    after(async () => {
      await oidc?.close();
    });

    it("DELETE /v2/auth/tokens/{id}: revoked at the provider (access and refresh), then deleted → 204", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const user = newUser();
      const done = await obtainToken(ctx, oidc, user.ask(), me.key);
      const id = done.token_id ?? "";
      const refresh = await storedRefreshToken(ctx, id);
      assert.equal(await oidc.userinfo(done.token ?? ""), 200, "valid before");
      const res = await send(ctx, "DELETE", `/v2/auth/tokens/${id}`, undefined, me.key);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, "");
      assert.equal(
        await oidc.userinfo(done.token ?? ""),
        401,
        "the provider no longer accepts the access token",
      );
      assert.equal(await refreshAccepted(MAIN, refresh), 400, "nor the refresh token");
      assert.equal(await tokenCount(ctx, id), 0);
      assert.deepEqual(await list(me.key, user.q), []);
      assert.equal((await send(ctx, "DELETE", `/v2/auth/tokens/${id}`, undefined, me.key)).statusCode, 404);
    });

    it("DELETE: the provider refuses the revocation → 502, the token is kept; once fixed → 204", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const done = await obtainToken(ctx, oidc, newUser().ask({ provider: SECOND.slug }), me.key);
      const id = done.token_id ?? "";
      const wrong = await send(ctx, "PATCH", `/v2/auth/providers/${SECOND.slug}`, {
        client_secret: "not-the-secret",
      });
      assert.equal(wrong.statusCode, 200, wrong.body);
      try {
        const res = await send(ctx, "DELETE", `/v2/auth/tokens/${id}`, undefined, me.key);
        assert.equal(res.statusCode, 502, res.body);
        assert.match(res.body, /not revoked at the provider and kept/);
        assert.match(res.body, /invalid_client/);
        assert.equal(await tokenCount(ctx, id), 1);
        assert.equal(await oidc.userinfo(done.token ?? ""), 200, "still valid there");
      } finally {
        const fixed = await send(ctx, "PATCH", `/v2/auth/providers/${SECOND.slug}`, {
          client_secret: SECOND.secret,
        });
        assert.equal(fixed.statusCode, 200, fixed.body);
      }
      assert.equal((await send(ctx, "DELETE", `/v2/auth/tokens/${id}`, undefined, me.key)).statusCode, 204);
      assert.equal(await oidc.userinfo(done.token ?? ""), 401);
    });

    it("DELETE: the provider cannot be reached → 502, the token is kept", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const user = newUser();
      const done = await obtainToken(ctx, oidc, user.ask(), me.key);
      const id = done.token_id ?? "";
      const down = `http://127.0.0.1:${await closedPort()}`;
      await ctx.db.orm.execute(sql`UPDATE oauth_tokens SET issuer = ${down} WHERE id = ${id}::uuid`);
      const res = await send(ctx, "DELETE", `/v2/auth/tokens/${id}`, undefined, me.key);
      assert.equal(res.statusCode, 502, res.body);
      assert.match(res.body, /could not be reached/);
      assert.equal(await tokenCount(ctx, id), 1);
      assert.equal((await list(me.key, user.q)).length, 1);
    });

    it("DELETE: a provider without a revocation endpoint only has the token forgotten (and it is logged)", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const user = newUser();
      const done = await obtainToken(ctx, oidc, user.ask(), me.key);
      const id = done.token_id ?? "";
      // An issuer that publishes no metadata: nothing says where to revoke.
      const bare = `${oidc.issuer}/no-metadata-here`;
      await ctx.db.orm.execute(sql`UPDATE oauth_tokens SET issuer = ${bare} WHERE id = ${id}::uuid`);
      const res = await send(ctx, "DELETE", `/v2/auth/tokens/${id}`, undefined, me.key);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(await tokenCount(ctx, id), 0);
      assert.equal(await oidc.userinfo(done.token ?? ""), 200, "not revoked: there was nowhere to");
      assert.match(ctx.readLogs(), /deleted without revocation/);
      // An issuer the SSRF rules refuse is never asked: the token is forgotten, not kept forever.
      const refused = await obtainToken(ctx, oidc, user.ask(), me.key);
      await ctx.db.orm.execute(
        sql`UPDATE oauth_tokens SET issuer = 'https://10.0.0.7' WHERE id = ${refused.token_id ?? ""}::uuid`,
      );
      const gone = await send(ctx, "DELETE", `/v2/auth/tokens/${refused.token_id}`, undefined, me.key);
      assert.equal(gone.statusCode, 204, gone.body);
      assert.equal(await tokenCount(ctx, refused.token_id ?? ""), 0);
    });

    it("the tenant's: any key of it acts on the token; another organization or workspace gets 404; user_id narrows", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const user = newUser();
      const done = await obtainToken(ctx, oidc, user.ask(), me.key);
      const id = done.token_id ?? "";
      assert.equal(done.user_id, user.id);
      for (const key of [ctx.keys.boundMember, ctx.other.admin]) {
        assert.equal((await send(ctx, "DELETE", `/v2/auth/tokens/${id}`, undefined, key)).statusCode, 404);
        const patch = await send(ctx, "PATCH", `/v2/auth/tokens/${id}/metadata`, { is_default: true }, key);
        assert.equal(patch.statusCode, 404);
        assert.deepEqual(await list(key, user.q), []);
      }
      const foreign = await send(ctx, "DELETE", `/v2/auth/tokens/${id}${user.q}`, undefined, ctx.other.admin);
      assert.equal(foreign.statusCode, 404, "naming the user does not cross organizations");
      const narrowed = await send(
        ctx,
        "DELETE",
        `/v2/auth/tokens/${id}?user_id=someone-else`,
        undefined,
        me.key,
      );
      assert.equal(narrowed.statusCode, 404, "another user's token is not found when a user is named");
      const viewer = await send(ctx, "DELETE", `/v2/auth/tokens/${id}${user.q}`, undefined, ctx.keys.viewer);
      assert.equal(viewer.statusCode, 403);
      assert.equal(await tokenCount(ctx, id), 1, "nothing was deleted");
      // Another key of the same tenant (the organization) sees and manages it: it is not the key's.
      const other = await newKey(ctx);
      assert.deepEqual(
        (await list(other.key, user.q)).map((t) => t.id),
        [id],
      );
      const labelled = await send(
        ctx,
        "PATCH",
        `/v2/auth/tokens/${id}/metadata`,
        { provider_account_label: "a" },
        other.key,
      );
      assert.equal(labelled.statusCode, 200, labelled.body);
    });

    it("exists and DELETE by provider: the user's tokens, across agents; unknown provider", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const [mine, theirs] = [newUser(), newUser()];
      const exists = async (key: string, slug: string, query = mine.q.replace("?", "&")) => {
        const res = await send(
          ctx,
          "GET",
          `/v2/auth/tokens/exists?provider_id=${slug}${query}`,
          undefined,
          key,
        );
        assert.equal(res.statusCode, 200, res.body);
        return res.json() as { has_token: boolean };
      };
      assert.deepEqual(await exists(me.key, MAIN.slug), { has_token: false });
      const plain = await obtainToken(ctx, oidc, mine.ask(), me.key);
      const agent = await obtainToken(ctx, oidc, mine.ask({ agent_id: "agent-9" }), me.key);
      const second = await obtainToken(ctx, oidc, mine.ask({ provider: SECOND.slug }), me.key);
      const other = await obtainToken(ctx, oidc, theirs.ask(), me.key);
      assert.deepEqual(await exists(me.key, MAIN.slug), { has_token: true });
      assert.deepEqual(await exists(me.key, MAIN.slug, ""), { has_token: true }, "the tenant holds one");
      assert.deepEqual(await exists(me.key, "no-such-provider"), { has_token: false });
      assert.deepEqual(await exists(ctx.other.admin, MAIN.slug), { has_token: false });
      assert.deepEqual(await exists(ctx.keys.boundMember, MAIN.slug), { has_token: false });

      const url = `/v2/auth/tokens?provider_id=${MAIN.slug}&user_id=${mine.id}`;
      const res = await send(ctx, "DELETE", url, undefined, me.key);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), {
        message: `Deleted 2 token(s) for provider "${MAIN.slug}".`,
        provider_id: MAIN.slug,
        deleted: 2,
      });
      assert.equal(await oidc.userinfo(plain.token ?? ""), 401);
      assert.equal(await oidc.userinfo(agent.token ?? ""), 401);
      assert.deepEqual(await exists(me.key, MAIN.slug), { has_token: false });
      assert.deepEqual(
        (await list(me.key, mine.q)).map((t) => t.id),
        [second.token_id],
        "another provider's token stays",
      );
      assert.deepEqual(
        await exists(me.key, MAIN.slug, `&user_id=${theirs.id}`),
        { has_token: true },
        "another user's stays",
      );
      assert.equal(await oidc.userinfo(other.token ?? ""), 200);

      const unknown = await send(
        ctx,
        "DELETE",
        `/v2/auth/tokens?provider_id=nope${mine.q.replace("?", "&")}`,
        undefined,
        me.key,
      );
      assert.equal(unknown.statusCode, 404, unknown.body);
      for (const bad of ["/v2/auth/tokens/exists", "/v2/auth/tokens/exists?provider_id=Bad%20Slug"]) {
        const res = await send(ctx, "GET", bad, undefined, me.key);
        assert.equal(res.statusCode, 422, bad);
        assert.deepEqual(detailLocs(res), ["query.provider_id"]);
      }
      const noSlug = await send(ctx, "DELETE", "/v2/auth/tokens", undefined, ctx.keys.admin);
      assert.equal(noSlug.statusCode, 422);
      const badUser = await send(
        ctx,
        "DELETE",
        `/v2/auth/tokens?provider_id=${MAIN.slug}&user_id=`,
        undefined,
        me.key,
      );
      assert.equal(badUser.statusCode, 422);
      assert.deepEqual([...new Set(detailLocs(badUser))], ["query.user_id"]);
      const viewer = await send(
        ctx,
        "DELETE",
        `/v2/auth/tokens?provider_id=${SECOND.slug}${mine.q.replace("?", "&")}`,
        undefined,
        ctx.keys.viewer,
      );
      assert.equal(viewer.statusCode, 403);
      const everyone = await send(
        ctx,
        "DELETE",
        `/v2/auth/tokens?provider_id=${SECOND.slug}`,
        undefined,
        me.key,
      );
      assert.equal(everyone.statusCode, 403, "every user's tokens: admin only");
      assert.equal(await oidc.userinfo(second.token ?? ""), 200, "nothing was revoked");
    });

    it("metadata: label set and cleared, default moves, null leaves as is, bad input 422", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const user = newUser();
      const first = await obtainToken(ctx, oidc, user.ask(), me.key);
      const second = await obtainToken(ctx, oidc, user.ask({ force_new: true }), me.key);
      assert.notEqual(first.token_id, second.token_id, "force_new adds a second token");
      const byId = async () => new Map((await list(me.key, user.q)).map((t) => [t.id, t]));
      let now = await byId();
      assert.equal(now.get(first.token_id ?? "")?.is_default, false, "the new token took the default");
      assert.equal(now.get(second.token_id ?? "")?.is_default, true);

      const patch = (id: string, body: unknown) =>
        send(ctx, "PATCH", `/v2/auth/tokens/${id}/metadata`, body, me.key);
      const labelled = await patch(first.token_id ?? "", {
        provider_account_label: "work account",
        is_default: true,
      });
      assert.equal(labelled.statusCode, 200, labelled.body);
      const summary = labelled.json() as TokenSummary;
      assert.equal(summary.provider_account_label, "work account");
      assert.equal(summary.is_default, true);
      assert.ok(Date.parse(summary.updated_at) >= Date.parse(summary.created_at));
      now = await byId();
      assert.equal(now.get(second.token_id ?? "")?.is_default, false, "at most one default");
      const handed = await authenticateAs(ctx, user.ask(), me.key);
      assert.equal(handed.status, "completed");
      assert.equal(handed.token_id, first.token_id, "authenticate hands out the default");

      const untouched = await patch(first.token_id ?? "", { provider_account_label: null, is_default: null });
      assert.equal(untouched.statusCode, 200);
      assert.equal((untouched.json() as TokenSummary).provider_account_label, "work account");
      assert.equal((untouched.json() as TokenSummary).is_default, true);
      const cleared = await patch(first.token_id ?? "", { provider_account_label: "", is_default: false });
      assert.equal((cleared.json() as TokenSummary).provider_account_label, null);
      assert.equal((cleared.json() as TokenSummary).is_default, false);
      now = await byId();
      assert.ok(![...now.values()].some((t) => t.is_default), "no default left");

      for (const [body, loc] of [
        [{ provider_account_label: "x".repeat(201) }, "body.provider_account_label"],
        [{ provider_account_label: "a\nb" }, "body.provider_account_label"],
        [{ is_default: "yes" }, "body.is_default"],
      ] as const) {
        const res = await patch(first.token_id ?? "", body);
        assert.equal(res.statusCode, 422, JSON.stringify(body));
        assert.ok(detailLocs(res).includes(loc), detailLocs(res).join());
      }
      assert.equal((await patch("not-a-uuid", {})).statusCode, 422);
      assert.equal((await patch(randomUUID(), { is_default: true })).statusCode, 404);
      const viewer = await send(
        ctx,
        "PATCH",
        `/v2/auth/tokens/${first.token_id}/metadata`,
        {},
        ctx.keys.viewer,
      );
      assert.equal(viewer.statusCode, 403);
    });

    it("authenticate: token_id picks a token, is_default false keeps the default, no user_id: the tenant's own", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx, "member", ctx.workspaceId);
      const own = `workspace:${ctx.workspaceId}`;
      const first = await obtainToken(ctx, oidc, ask(), me.key);
      assert.equal(first.user_id, own, "without user_id: the tenant's own token");
      const extra = await obtainToken(ctx, oidc, ask({ force_new: true, is_default: false }), me.key);
      const tokens = new Map((await list(me.key, `?user_id=${own}`)).map((t) => [t.id, t]));
      assert.equal(tokens.size, 2);
      assert.equal(tokens.get(first.token_id ?? "")?.is_default, true, "still the default");
      assert.equal(tokens.get(extra.token_id ?? "")?.is_default, false);
      assert.equal(tokens.get(first.token_id ?? "")?.user_id, own);
      const byDefault = await authenticateAs(ctx, ask(), me.key);
      assert.equal(byDefault.token_id, first.token_id);
      const picked = await authenticateAs(ctx, ask({ token_id: extra.token_id }), me.key);
      assert.equal(picked.status, "completed");
      assert.equal(picked.token_id, extra.token_id);
      assert.equal(picked.token, extra.token);
      // Another tenant's token cannot be picked; nor, when a user is named, another user's.
      for (const [body, key] of [
        [ask({ token_id: extra.token_id }), ctx.keys.boundMember],
        [ask({ token_id: extra.token_id }), ctx.other.admin],
        [ask({ token_id: extra.token_id, user_id: "someone-else" }), me.key],
      ] as const) {
        const res = await send(ctx, "POST", "/v2/auth/authenticate", body, key);
        assert.equal(res.statusCode, 422, res.body);
        assert.ok(
          detailLocs(res).includes("body.token_id") || detailLocs(res).includes("body.provider"),
          res.body,
        );
      }
      // The organization's key sees the workspace's token and may pick it.
      const byOrg = await authenticateAs(ctx, ask({ token_id: extra.token_id }), ctx.keys.member);
      assert.equal(byOrg.token_id, extra.token_id);
      // force_new with token_id renews that token: same id, new value.
      const renewed = await obtainToken(
        ctx,
        oidc,
        ask({ token_id: extra.token_id, force_new: true }),
        me.key,
      );
      assert.equal(renewed.token_id, extra.token_id);
      assert.notEqual(renewed.token, extra.token);
      assert.equal((await list(me.key, `?user_id=${own}`)).length, 2);
      const flows = await rows<{ n: number }>(
        ctx.db.orm,
        sql`SELECT count(*)::int AS n FROM oauth_flows WHERE user_id = ${own} AND tenant_workspace_id = ${ctx.workspaceId}::uuid`,
      );
      assert.equal(flows[0]?.n, 3, "three flows ran, no more");
    });

    it("Slack workspace tokens: exists per workspace; DELETE is admin only and revokes them all", async () => {
      const ctx = suite.ctx;
      const slack = { provider: SLACK.slug, scopes: ["openid"] };
      const existsIn = async (key: string, tenant?: string) => {
        const headers: Record<string, string> = { "x-api-key": key };
        if (tenant) headers["x-tenant-id"] = tenant;
        const res = await ctx.app.inject({
          method: "GET",
          url: "/v2/auth/tokens/workspace/slack/exists",
          headers,
        });
        assert.equal(res.statusCode, 200, res.body);
        return (res.json() as { has_token: boolean }).has_token;
      };
      assert.equal(await existsIn(ctx.keys.member), false);
      const alice = await newKey(ctx, "member");
      const bob = await newKey(ctx, "member");
      const inWs2 = await newKey(ctx, "member", ctx.workspace2Id);
      const a = await obtainToken(ctx, oidc, { ...slack, user_id: "alice" }, alice.key);
      const b = await obtainToken(ctx, oidc, { ...slack, user_id: "bob", agent_id: "bot" }, bob.key);
      const c = await obtainToken(ctx, oidc, slack, inWs2.key);
      const notSlack = await obtainToken(ctx, oidc, ask({ user_id: "alice" }), alice.key);
      assert.equal(await existsIn(ctx.keys.viewer), true, "anyone of the workspace may ask");
      assert.equal(await existsIn(ctx.keys.member, ctx.workspace2Id), true);
      assert.equal(await existsIn(ctx.other.admin), false, "another organization");

      const member = await send(ctx, "DELETE", "/v2/auth/tokens/workspace/slack", undefined, ctx.keys.member);
      assert.equal(member.statusCode, 403);
      assert.equal(await oidc.userinfo(a.token ?? ""), 200);

      // A key bound to the workspace sees and deletes its workspace's own tokens, not the organization's.
      const boundAdmin = await newKey(ctx, "admin", ctx.workspaceId);
      assert.equal(await existsIn(boundAdmin.key), false, "the organization's tokens are not its");
      const d = await obtainToken(ctx, oidc, slack, boundAdmin.key);
      assert.equal(await existsIn(boundAdmin.key), true);
      const own = await send(ctx, "DELETE", "/v2/auth/tokens/workspace/slack", undefined, boundAdmin.key);
      assert.equal(own.statusCode, 200, own.body);
      assert.equal((own.json() as { deleted: number }).deleted, 1);
      assert.equal(await oidc.userinfo(d.token ?? ""), 401);
      assert.equal(await oidc.userinfo(a.token ?? ""), 200, "the organization's token stays");
      const res = await send(ctx, "DELETE", "/v2/auth/tokens/workspace/slack", undefined, ctx.keys.admin);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), { message: "Deleted 2 Slack token(s) of this workspace.", deleted: 2 });
      assert.equal(await oidc.userinfo(a.token ?? ""), 401);
      assert.equal(await oidc.userinfo(b.token ?? ""), 401);
      assert.equal(await existsIn(ctx.keys.member), false);
      assert.equal(await oidc.userinfo(c.token ?? ""), 200, "the other workspace's token stays");
      assert.equal(await existsIn(ctx.keys.member, ctx.workspace2Id), true);
      assert.equal(await oidc.userinfo(notSlack.token ?? ""), 200, "other providers' tokens stay");
    });

    /** A token of the other organization, and one of the first organization a workspace2 key must not see. */
    const tokenOf = async (ctx: TestContext, key: string) => {
      const other = key === ctx.other.admin;
      if (other) await createProviderFor(ctx, oidc, MAIN, {}, key).catch(() => undefined);
      const done = await obtainToken(ctx, oidc, ask({ user_id: `matrix-${randomUUID()}` }), key);
      return done.token_id ?? "";
    };
    const outside = {
      otherTenantUrl: async (ctx: TestContext) => `/v2/auth/tokens/${await tokenOf(ctx, ctx.other.admin)}`,
      otherWorkspaceUrl: async (ctx: TestContext) => `/v2/auth/tokens/${await tokenOf(ctx, ctx.keys.member)}`,
    };
    authMatrix(suite, { method: "GET", url: () => `/v2/auth/tokens/exists?provider_id=${MAIN.slug}` });
    authMatrix(suite, { method: "GET", url: () => "/v2/auth/tokens?user_id=nobody" });
    authMatrix(suite, {
      method: "DELETE",
      url: () => `/v2/auth/tokens?provider_id=${SECOND.slug}&user_id=nobody`,
    });
    authMatrix(suite, {
      method: "DELETE",
      url: () => `/v2/auth/tokens?provider_id=${SECOND.slug}`,
      role: "admin",
    });
    authMatrix(suite, {
      method: "PATCH",
      url: () => `/v2/auth/tokens/${randomUUID()}/metadata`,
      payload: () => ({ is_default: true }),
      otherTenantUrl: async (ctx: TestContext) => `${await outside.otherTenantUrl(ctx)}/metadata`,
      otherWorkspaceUrl: async (ctx: TestContext) => `${await outside.otherWorkspaceUrl(ctx)}/metadata`,
    });
    authMatrix(suite, { method: "DELETE", url: () => `/v2/auth/tokens/${randomUUID()}`, ...outside });
    authMatrix(suite, {
      method: "GET",
      url: () => "/v2/auth/tokens/workspace/slack/exists",
      workspace: true,
    });
    authMatrix(suite, {
      method: "DELETE",
      url: () => "/v2/auth/tokens/workspace/slack",
      role: "admin",
      workspace: true,
    });
  },
  { env: LOOPBACK_ENV },
);
