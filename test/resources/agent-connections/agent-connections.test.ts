import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
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
  type Reply,
  send,
} from "../../helpers/oauth.ts";
import { type OidcServer, startOidcServer } from "../../helpers/oidc-server.ts";

const client = (slug: string) => ({ slug, secret: `secret-${slug}-${randomBytes(12).toString("hex")}` });
const MAIN = client("conn-main");
const SECOND = client("conn-second");

interface Connection {
  id: string;
  agent_id: string;
  oauth_token_id: string;
  provider_id: string;
  created_by: string;
  provider_account_label: string | null;
  scopes: string[];
  expires_at: string | null;
  created_at: string;
}

const KEYS = [
  "agent_id",
  "created_at",
  "created_by",
  "expires_at",
  "id",
  "oauth_token_id",
  "provider_account_label",
  "provider_id",
  "scopes",
];

async function connect(
  ctx: TestContext,
  agent: string,
  tokenId: string,
  key: string,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return ctx.app.inject({
    method: "POST",
    url: `/v2/auth/agents/${agent}/connections`,
    headers: { "x-api-key": key, "content-type": "application/json", ...headers },
    payload: JSON.stringify({ oauth_token_id: tokenId }),
  });
}

async function listOf(ctx: TestContext, agent: string, key: string, headers: Record<string, string> = {}) {
  const res = await ctx.app.inject({
    method: "GET",
    url: `/v2/auth/agents/${agent}/connections`,
    headers: { "x-api-key": key, ...headers },
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { data: Connection[] };
}

forEachDatabase(
  "agent connections",
  (suite) => {
    let oidc: OidcServer;
    /** Tokens are the tenant's: each test keeps its own apart with end users of its own. */
    const ask = (extra: Record<string, unknown> = {}) => ({
      provider: MAIN.slug,
      scopes: ["openid"],
      user_id: `user-${randomUUID()}`,
      ...extra,
    });

    before(async () => {
      oidc = await startOidcServer({ clients: [MAIN, SECOND].map(clientSpec) });
      await createProviderFor(suite.ctx, oidc, MAIN);
      await createProviderFor(suite.ctx, oidc, SECOND);
    });
    after(async () => {
      await oidc?.close();
    });

    it("create → 201 with the record, list {data}, delete → 204 (the token stays)", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const user = `user-${randomUUID()}`;
      const token = await obtainToken(ctx, oidc, ask({ user_id: user }), me.key);
      const agent = `agent-${randomUUID()}`;
      assert.deepEqual(await listOf(ctx, agent, me.key), { data: [] });
      const res = await connect(ctx, agent, token.token_id ?? "", me.key);
      assert.equal(res.statusCode, 201, res.body);
      const conn = res.json() as Connection;
      assert.deepEqual(Object.keys(conn).sort(), KEYS);
      assert.match(conn.id, /^[0-9a-f-]{36}$/);
      assert.equal(conn.agent_id, agent);
      assert.equal(conn.oauth_token_id, token.token_id);
      assert.equal(conn.provider_id, MAIN.slug);
      assert.equal(conn.created_by, `apikey:${me.id}`, "who linked it: the calling key");
      assert.deepEqual(conn.scopes, token.scopes);
      assert.ok(conn.expires_at);
      assert.equal(conn.provider_account_label, null);
      assert.deepEqual(await listOf(ctx, agent, me.key), { data: [conn] });
      assert.deepEqual(await listOf(ctx, agent, ctx.keys.viewer), { data: [conn] }, "the workspace sees it");

      const del = await send(
        ctx,
        "DELETE",
        `/v2/auth/agents/${agent}/connections/${conn.id}`,
        undefined,
        me.key,
      );
      assert.equal(del.statusCode, 204, del.body);
      assert.equal(del.body, "");
      assert.deepEqual(await listOf(ctx, agent, me.key), { data: [] });
      const again = await send(
        ctx,
        "DELETE",
        `/v2/auth/agents/${agent}/connections/${conn.id}`,
        undefined,
        me.key,
      );
      assert.equal(again.statusCode, 404);
      const tokens = (await send(ctx, "GET", `/v2/auth/tokens?user_id=${user}`, undefined, me.key)).json();
      assert.equal((tokens as unknown[]).length, 1);
    });

    it("the token must be one the workspace may use (404); one connection per provider (409); bad input 422", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const other = await newKey(ctx, "member", ctx.workspace2Id);
      const user = `user-${randomUUID()}`;
      const mine = await obtainToken(ctx, oidc, ask({ user_id: user }), me.key);
      const mine2 = await obtainToken(ctx, oidc, ask({ user_id: user, force_new: true }), me.key);
      // Another workspace's token: the organization's key sees it, this workspace's agents may not use it.
      const theirs = await obtainToken(ctx, oidc, ask(), other.key);
      const agent = `agent-${randomUUID()}`;
      for (const id of [theirs.token_id ?? "", randomUUID()]) {
        const res = await connect(ctx, agent, id, me.key);
        assert.equal(res.statusCode, 404, res.body);
      }
      const foreignOrg = await connect(ctx, agent, mine.token_id ?? "", ctx.other.admin);
      assert.equal(foreignOrg.statusCode, 404);
      assert.equal((await connect(ctx, agent, mine.token_id ?? "", me.key)).statusCode, 201);
      const dup = await connect(ctx, agent, mine.token_id ?? "", me.key);
      assert.equal(dup.statusCode, 409, dup.body);
      const sameProvider = await connect(ctx, agent, mine2.token_id ?? "", me.key);
      assert.equal(sameProvider.statusCode, 409);
      assert.match(sameProvider.body, /already has a connection for provider/);
      const elsewhere = await obtainToken(ctx, oidc, ask({ provider: SECOND.slug, user_id: user }), me.key);
      assert.equal((await connect(ctx, agent, elsewhere.token_id ?? "", me.key)).statusCode, 201);
      assert.equal((await listOf(ctx, agent, me.key)).data.length, 2);

      const badAgents = ["a%20b", "-lead", "a%00b", "a%2Fb", "%C3%A9"];
      for (const bad of badAgents) {
        const res = await connect(ctx, bad, mine.token_id ?? "", me.key);
        assert.equal(res.statusCode, 422, `${bad}: ${res.body}`);
        assert.deepEqual(detailLocs(res), ["path.agent_id"]);
        const listed = await send(ctx, "GET", `/v2/auth/agents/${bad}/connections`, undefined, me.key);
        assert.equal(listed.statusCode, 422);
      }
      for (const body of [{}, { oauth_token_id: "nope" }, { oauth_token_id: 7 }]) {
        const res = await ctx.app.inject({
          method: "POST",
          url: `/v2/auth/agents/${agent}/connections`,
          headers: { "x-api-key": me.key, "content-type": "application/json" },
          payload: JSON.stringify(body),
        });
        assert.equal(res.statusCode, 422, JSON.stringify(body));
        assert.deepEqual(detailLocs(res), ["body.oauth_token_id"]);
      }
      const longest = await connect(ctx, "x".repeat(100), mine.token_id ?? "", me.key);
      assert.equal(longest.statusCode, 201, "100 characters are allowed");
      const viaLongest = await authenticateAs(ctx, ask({ user_id: user, agent_id: "x".repeat(100) }), me.key);
      assert.equal(viaLongest.token_id, mine.token_id, "authenticate takes the same ids");
      const over = await send(
        ctx,
        "POST",
        "/v2/auth/authenticate",
        ask({ agent_id: "x".repeat(101) }),
        me.key,
      );
      assert.equal(over.statusCode, 422);
      assert.ok(
        detailLocs(over).every((loc) => loc === "body.agent_id"),
        detailLocs(over).join(),
      );
      const badId = await send(
        ctx,
        "DELETE",
        `/v2/auth/agents/${agent}/connections/not-a-uuid`,
        undefined,
        me.key,
      );
      assert.equal(badId.statusCode, 422);
      const viewer = await connect(ctx, agent, mine.token_id ?? "", ctx.keys.viewer);
      assert.equal(viewer.statusCode, 403);
      assert.equal((await listOf(ctx, agent, me.key)).data.length, 2, "nothing changed");
    });

    it("connections live in a workspace: another workspace or organization sees none and cannot delete (404)", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const token = await obtainToken(ctx, oidc, ask(), me.key);
      const agent = "shared-agent-name";
      const conn = (await connect(ctx, agent, token.token_id ?? "", me.key)).json() as Connection;
      const ws2 = { "x-tenant-id": ctx.workspace2Id };
      assert.deepEqual(await listOf(ctx, agent, me.key, ws2), { data: [] });
      assert.deepEqual(await listOf(ctx, agent, ctx.other.admin), { data: [] });
      const url = `/v2/auth/agents/${agent}/connections/${conn.id}`;
      for (const headers of [
        { "x-api-key": me.key, ...ws2 },
        { "x-api-key": ctx.keys.boundMember },
        { "x-api-key": ctx.other.admin },
      ]) {
        const res = await ctx.app.inject({ method: "DELETE", url, headers });
        assert.equal(res.statusCode, 404, res.body);
      }
      const otherAgent = await send(
        ctx,
        "DELETE",
        `/v2/auth/agents/another-agent/connections/${conn.id}`,
        undefined,
        me.key,
      );
      assert.equal(otherAgent.statusCode, 404);
      assert.deepEqual(await listOf(ctx, agent, me.key), { data: [conn] });
      // The same token may serve an agent of the same name in another workspace.
      const there = await connect(ctx, agent, token.token_id ?? "", me.key, ws2);
      assert.equal(there.statusCode, 201, there.body);
    });

    it("authenticate with agent_id hands out the connection's token, to anyone of the workspace", async () => {
      const ctx = suite.ctx;
      const owner = await newKey(ctx);
      const caller = await newKey(ctx, "member", ctx.workspaceId);
      const user = `user-${randomUUID()}`;
      const token = await obtainToken(ctx, oidc, ask({ user_id: user }), owner.key);
      const agent = `agent-${randomUUID()}`;
      const conn = (await connect(ctx, agent, token.token_id ?? "", owner.key)).json() as Connection;
      const answer = await authenticateAs(ctx, ask({ agent_id: agent }), caller.key);
      assert.equal(answer.status, "completed", JSON.stringify(answer));
      assert.equal(answer.token, token.token);
      assert.equal(answer.token_id, token.token_id);
      assert.equal(answer.user_id, user);
      assert.deepEqual(answer.metadata, { agent_id: agent, connection_id: conn.id });

      const wider = await authenticateAs(
        ctx,
        ask({ agent_id: agent, scopes: ["openid", "email"] }),
        caller.key,
      );
      assert.equal(wider.status, "connection_required");
      assert.equal(wider.token, undefined, "no token when it does not cover the scopes");
      assert.deepEqual(wider.metadata, {
        agent_id: agent,
        connection_id: conn.id,
        missing_scopes: ["email"],
      });

      // Another workspace's agent of that name has no connection: a flow of the caller's own starts.
      const ws2 = await newKey(ctx, "member", ctx.workspace2Id);
      const elsewhere = await authenticateAs(ctx, ask({ agent_id: agent }), ws2.key);
      assert.equal(elsewhere.status, "pending");
      // force_new ignores the connection and starts a flow of the caller's tenant.
      const forced = await authenticateAs(
        ctx,
        { provider: MAIN.slug, scopes: ["openid"], agent_id: agent, force_new: true },
        caller.key,
      );
      assert.equal(forced.status, "pending");
      assert.equal(forced.user_id, `workspace:${ctx.workspaceId}`);

      // The token's grant expires and cannot be renewed: the connection says so.
      await ctx.db.orm.execute(
        sql`UPDATE oauth_tokens SET refresh_token_enc = NULL, expires_at = now() - interval '1 minute',
                   issued_at = now() - interval '1 hour' WHERE id = ${token.token_id ?? ""}::uuid`,
      );
      const expired = await authenticateAs(ctx, ask({ agent_id: agent }), caller.key);
      assert.equal(expired.status, "token_expired");
      assert.equal(expired.token, undefined);
    });

    it("deleting the token deletes its connections", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const token = await obtainToken(ctx, oidc, ask(), me.key);
      const agent = `agent-${randomUUID()}`;
      assert.equal((await connect(ctx, agent, token.token_id ?? "", me.key)).statusCode, 201);
      const del = await send(ctx, "DELETE", `/v2/auth/tokens/${token.token_id}`, undefined, me.key);
      assert.equal(del.statusCode, 204, del.body);
      assert.deepEqual(await listOf(ctx, agent, me.key), { data: [] });
      const left = await rows<{ n: number }>(
        ctx.db.orm,
        sql`SELECT count(*)::int AS n FROM agent_connections WHERE oauth_token_ref = ${token.token_id ?? ""}::uuid`,
      );
      assert.equal(left[0]?.n, 0);
    });

    const someAgent = "matrix-agent";
    authMatrix(suite, {
      method: "GET",
      url: () => `/v2/auth/agents/${someAgent}/connections`,
      workspace: true,
    });
    authMatrix(suite, {
      method: "POST",
      url: () => `/v2/auth/agents/${someAgent}/connections`,
      payload: () => ({ oauth_token_id: randomUUID() }),
      workspace: true,
    });
    authMatrix(suite, {
      method: "DELETE",
      url: () => `/v2/auth/agents/${someAgent}/connections/${randomUUID()}`,
      workspace: true,
      otherTenantUrl: async (ctx: TestContext) => {
        // A connection of the other organization, made through its own API.
        const other = ctx.other.admin;
        await createProviderFor(ctx, oidc, MAIN, {}, other).catch(() => undefined);
        const token = await obtainToken(ctx, oidc, ask(), other);
        const res = await connect(ctx, someAgent, token.token_id ?? "", other);
        assert.equal(res.statusCode, 201, res.body);
        return `/v2/auth/agents/${someAgent}/connections/${(res.json() as Connection).id}`;
      },
      otherWorkspaceUrl: async (ctx: TestContext) => {
        // A connection of the default workspace, which a key bound to workspace2 does not see.
        const token = await obtainToken(ctx, oidc, ask(), ctx.keys.member);
        const res = await connect(ctx, `ws1-${randomUUID()}`, token.token_id ?? "", ctx.keys.member);
        assert.equal(res.statusCode, 201, res.body);
        const conn = res.json() as Connection;
        return `/v2/auth/agents/${conn.agent_id}/connections/${conn.id}`;
      },
    });
  },
  { env: LOOPBACK_ENV },
);
