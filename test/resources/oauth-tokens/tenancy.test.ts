// Why over 300 lines: the auth SDK's sequence for both kinds of key, rotation, and every tenancy rule share one provider server and fixture.
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { after, before, it } from "node:test";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import {
  authenticateAs,
  clientSpec,
  createProviderFor,
  LOOPBACK_ENV,
  newKey,
  obtainToken,
  type Reply,
  send,
  type TokenSummary,
} from "../../helpers/oauth.ts";
import { type OidcServer, startOidcServer } from "../../helpers/oidc-server.ts";

/**
 * Tokens belong to the tenant they were obtained in (the organization, and the workspace of a
 * workspace-bound key), not to the key nor to the end user: the hosted service's auth SDK
 * authenticates an end user, then acts on the token with the same key.
 */

const client = (slug: string) => ({ slug, secret: `secret-${slug}-${randomBytes(12).toString("hex")}` });
/** One provider per test, so that what a test counts is its own. */
const SDK_ORG = client("sdk-org");
const SDK_WS = client("sdk-ws");
const ROTATE = client("rotate");
const SPLIT = client("split");
const BULK_ORG = client("bulk-org");
const BULK_WS = client("bulk-ws");
const WAIT = client("wait-tenant");
const ALL = [SDK_ORG, SDK_WS, ROTATE, SPLIT, BULK_ORG, BULK_WS, WAIT];

type Headers = Record<string, string>;

async function call(
  ctx: TestContext,
  method: "GET" | "POST" | "PATCH" | "DELETE",
  url: string,
  key: string,
  body?: unknown,
  extra: Headers = {},
): Promise<Reply> {
  const headers: Headers = { "x-api-key": key, ...extra };
  if (body !== undefined) headers["content-type"] = "application/json";
  return ctx.app.inject({
    method,
    url,
    headers,
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
}

forEachDatabase(
  "oauth tokens belong to their tenant",
  (suite) => {
    let oidc: OidcServer;
    const ask = (provider: string, extra: Record<string, unknown> = {}) => ({
      provider,
      scopes: ["openid"],
      ...extra,
    });
    const exists = async (key: string, provider: string, query = "") => {
      const res = await call(suite.ctx, "GET", `/v2/auth/tokens/exists?provider_id=${provider}${query}`, key);
      assert.equal(res.statusCode, 200, res.body);
      return (res.json() as { has_token: boolean }).has_token;
    };
    const list = async (key: string, query = "") => {
      const res = await call(suite.ctx, "GET", `/v2/auth/tokens${query}`, key);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as (TokenSummary & { workspace_id: string | null })[];
    };
    const ids = (tokens: { id: string }[]) => tokens.map((t) => t.id).sort();
    const patch = (key: string, id: string, body: unknown, query = "") =>
      call(suite.ctx, "PATCH", `/v2/auth/tokens/${id}/metadata${query}`, key, body);
    const remove = (key: string, id: string, query = "") =>
      call(suite.ctx, "DELETE", `/v2/auth/tokens/${id}${query}`, key);
    const connect = (key: string, agent: string, id: string, extra: Headers = {}, query = "") =>
      call(
        suite.ctx,
        "POST",
        `/v2/auth/agents/${agent}/connections${query}`,
        key,
        { oauth_token_id: id },
        extra,
      );

    before(async () => {
      oidc = await startOidcServer({ clients: ALL.map(clientSpec) });
      for (const c of ALL) await createProviderFor(suite.ctx, oidc, c);
    });
    after(async () => {
      await oidc?.close();
    });

    // The hosted service's auth SDK, step by step: authenticate an end user, then act on the token
    // with the same key, for an organization-level key and for a workspace-bound one.
    for (const [label, provider, bulk, bound] of [
      ["an organization-level key", SDK_ORG, BULK_ORG, false],
      ["a workspace-bound key", SDK_WS, BULK_WS, true],
    ] as const) {
      const keyOf = (ctx: TestContext, role: "admin" | "member" = "member") =>
        newKey(ctx, role, bound ? ctx.workspace2Id : null);
      const headers = (ctx: TestContext): Headers => (bound ? { "x-tenant-id": ctx.workspace2Id } : {});

      it(`SDK with ${label}: exists answers true for the token authenticate just obtained for user_id`, async () => {
        const ctx = suite.ctx;
        const me = await keyOf(ctx);
        const user = `u-${randomUUID()}`;
        assert.equal(await exists(me.key, provider.slug, `&user_id=${user}`), false);
        const done = await obtainToken(ctx, oidc, ask(provider.slug, { user_id: user }), me.key);
        assert.equal(done.user_id, user, "user_id labels the end user");
        assert.equal(await exists(me.key, provider.slug), true, "without user_id: the tenant's tokens");
        assert.equal(await exists(me.key, provider.slug, `&user_id=${user}`), true);
        assert.equal(await exists(me.key, provider.slug, "&user_id=someone-else"), false, "user_id narrows");
        const again = await authenticateAs(ctx, ask(provider.slug, { user_id: user }), me.key);
        assert.equal(again.status, "completed", "authenticate with user_id finds that user's token");
        assert.equal(again.token_id, done.token_id);
      });

      it(`SDK with ${label}: PATCH metadata of the token the key just obtained → 200`, async () => {
        const ctx = suite.ctx;
        const me = await keyOf(ctx);
        const user = `u-${randomUUID()}`;
        const done = await obtainToken(ctx, oidc, ask(provider.slug, { user_id: user }), me.key);
        const res = await patch(me.key, done.token_id ?? "", { provider_account_label: "work" });
        assert.equal(res.statusCode, 200, res.body);
        const summary = res.json() as TokenSummary & { workspace_id: string | null };
        assert.equal(summary.provider_account_label, "work");
        assert.equal(summary.user_id, user);
        assert.equal(summary.workspace_id, bound ? ctx.workspace2Id : null, "the tenant's workspace");
        const named = await patch(me.key, done.token_id ?? "", { is_default: true }, `?user_id=${user}`);
        assert.equal(named.statusCode, 200, named.body);
        const other = await patch(me.key, done.token_id ?? "", { is_default: true }, "?user_id=nobody");
        assert.equal(other.statusCode, 404, "user_id narrows: another user's token is not found");
      });

      it(`SDK with ${label}: POST an agent connection for the token the key just obtained → 201`, async () => {
        const ctx = suite.ctx;
        const me = await keyOf(ctx);
        const user = `u-${randomUUID()}`;
        const done = await obtainToken(ctx, oidc, ask(provider.slug, { user_id: user }), me.key);
        const agent = `agent-${randomUUID()}`;
        const res = await connect(me.key, agent, done.token_id ?? "", headers(ctx));
        assert.equal(res.statusCode, 201, res.body);
        const answer = await authenticateAs(ctx, ask(provider.slug, { agent_id: agent }), me.key);
        assert.equal(answer.status, "completed");
        assert.equal(answer.token_id, done.token_id, "the agent's connection hands the token out");
        const narrowed = await connect(
          me.key,
          `agent-${randomUUID()}`,
          done.token_id ?? "",
          headers(ctx),
          "?user_id=nobody",
        );
        assert.equal(narrowed.statusCode, 404, narrowed.body);
      });

      it(`SDK with ${label}: DELETE the token the key just obtained → 204, revoked at the provider`, async () => {
        const ctx = suite.ctx;
        const me = await keyOf(ctx);
        const user = `u-${randomUUID()}`;
        const done = await obtainToken(ctx, oidc, ask(provider.slug, { user_id: user }), me.key);
        assert.equal((await remove(me.key, done.token_id ?? "", "?user_id=nobody")).statusCode, 404);
        const res = await remove(me.key, done.token_id ?? "");
        assert.equal(res.statusCode, 204, res.body);
        assert.equal(await oidc.userinfo(done.token ?? ""), 401);
        assert.equal(await exists(me.key, provider.slug, `&user_id=${user}`), false);
      });

      it(`SDK with ${label}: DELETE by provider deletes the tenant's tokens (admin), or one user's (member)`, async () => {
        const ctx = suite.ctx;
        const admin = await keyOf(ctx, "admin");
        const member = await keyOf(ctx);
        const [u1, u2] = [`u-${randomUUID()}`, `u-${randomUUID()}`];
        const first = await obtainToken(ctx, oidc, ask(bulk.slug, { user_id: u1 }), admin.key);
        const second = await obtainToken(ctx, oidc, ask(bulk.slug, { user_id: u2 }), admin.key);
        const url = `/v2/auth/tokens?provider_id=${bulk.slug}`;
        const refused = await call(ctx, "DELETE", url, member.key);
        assert.equal(refused.statusCode, 403, refused.body);
        assert.match(refused.body, /admin/);
        assert.equal(await oidc.userinfo(first.token ?? ""), 200, "nothing was revoked");
        const one = await call(ctx, "DELETE", `${url}&user_id=${u1}`, member.key);
        assert.equal(one.statusCode, 200, one.body);
        assert.equal((one.json() as { deleted: number }).deleted, 1);
        assert.equal(await oidc.userinfo(first.token ?? ""), 401);
        assert.equal(await oidc.userinfo(second.token ?? ""), 200, "another user's token stays");
        const all = await call(ctx, "DELETE", url, admin.key);
        assert.equal(all.statusCode, 200, all.body);
        assert.equal((all.json() as { deleted: number }).deleted, 1);
        assert.equal(await oidc.userinfo(second.token ?? ""), 401);
        assert.equal(await exists(admin.key, bulk.slug), false);
      });
    }

    it("rotating a key keeps its tenant's tokens: a new key of the same tenant gets them without a flow", async () => {
      const ctx = suite.ctx;
      for (const ws of [null, ctx.workspace2Id]) {
        const old = await newKey(ctx, "member", ws);
        const user = `u-${randomUUID()}`;
        const named = await obtainToken(ctx, oidc, ask(ROTATE.slug, { user_id: user }), old.key);
        const own = await obtainToken(ctx, oidc, ask(ROTATE.slug), old.key);
        const tenantUser = ws === null ? `organization:${ctx.orgId}` : `workspace:${ws}`;
        assert.equal(own.user_id, tenantUser, "without user_id the token is the tenant's own");
        const revoked = await call(ctx, "DELETE", `/v1/api-keys/${old.id}`, ctx.keys.admin);
        assert.equal(revoked.statusCode, 200, revoked.body);
        assert.equal((await call(ctx, "GET", "/v2/auth/tokens", old.key)).statusCode, 401);

        const next = await newKey(ctx, "member", ws);
        const forUser = await authenticateAs(ctx, ask(ROTATE.slug, { user_id: user }), next.key);
        assert.equal(forUser.status, "completed", JSON.stringify(forUser));
        assert.equal(forUser.token_id, named.token_id);
        assert.equal(forUser.token, named.token);
        const forTenant = await authenticateAs(ctx, ask(ROTATE.slug), next.key);
        assert.equal(forTenant.status, "completed", JSON.stringify(forTenant));
        assert.equal(forTenant.token_id, own.token_id);
        assert.deepEqual(
          ids(await list(next.key, `?provider_id=${ROTATE.slug}`)),
          [named.token_id, own.token_id].sort(),
        );
        assert.equal(
          (await patch(next.key, named.token_id ?? "", { provider_account_label: "kept" })).statusCode,
          200,
        );
      }
    });

    it("tenants: a workspace-bound key sees only its workspace's tokens, an organization-level key the organization's", async () => {
      const ctx = suite.ctx;
      const org = await newKey(ctx, "member");
      const ws2 = await newKey(ctx, "member", ctx.workspace2Id);
      const ws1 = await newKey(ctx, "member", ctx.workspaceId);
      const user = `u-${randomUUID()}`;
      const ofOrg = await obtainToken(ctx, oidc, ask(SPLIT.slug, { user_id: user }), org.key);
      // The same end user id in a workspace is another person: a flow of its own, not the org's token.
      const ofWs2 = await obtainToken(ctx, oidc, ask(SPLIT.slug, { user_id: user }), ws2.key);
      assert.notEqual(ofWs2.token_id, ofOrg.token_id);
      assert.equal(
        (await authenticateAs(ctx, ask(SPLIT.slug, { user_id: user }), org.key)).token_id,
        ofOrg.token_id,
      );
      assert.equal(
        (await authenticateAs(ctx, ask(SPLIT.slug, { user_id: user }), ws2.key)).token_id,
        ofWs2.token_id,
      );

      const orgView = await list(org.key, `?provider_id=${SPLIT.slug}`);
      assert.deepEqual(
        ids(orgView),
        [ofOrg.token_id, ofWs2.token_id].sort(),
        "the organization's, every workspace's too",
      );
      assert.deepEqual(orgView.map((t) => t.workspace_id).sort(), [ctx.workspace2Id, null].sort());
      assert.deepEqual(ids(await list(ws2.key, `?provider_id=${SPLIT.slug}`)), [ofWs2.token_id]);
      assert.deepEqual(await list(ws1.key, `?provider_id=${SPLIT.slug}`), []);
      assert.equal(await exists(ws1.key, SPLIT.slug), false);
      assert.equal(await exists(ctx.other.admin, SPLIT.slug), false);

      // Another workspace's key and another organization never touch them: 404, and nothing changes.
      for (const [key, id] of [
        [ws1.key, ofOrg.token_id],
        [ws1.key, ofWs2.token_id],
        [ws2.key, ofOrg.token_id],
        [ctx.other.admin, ofOrg.token_id],
        [ctx.other.admin, ofWs2.token_id],
      ] as const) {
        assert.equal((await patch(key, id ?? "", { provider_account_label: "x" })).statusCode, 404);
        assert.equal((await remove(key, id ?? "")).statusCode, 404);
        assert.equal((await connect(key, "split-agent", id ?? "")).statusCode, 404);
        const picked = await send(
          ctx,
          "POST",
          "/v2/auth/authenticate",
          ask(SPLIT.slug, { token_id: id }),
          key,
        );
        assert.ok([404, 422].includes(picked.statusCode), picked.body);
      }
      // The viewer of the organization reads but never writes.
      assert.equal(ids(await list(ctx.keys.viewer, `?provider_id=${SPLIT.slug}`)).length, 2);
      assert.equal((await patch(ctx.keys.viewer, ofOrg.token_id ?? "", {})).statusCode, 403);
      assert.equal((await remove(ctx.keys.viewer, ofOrg.token_id ?? "")).statusCode, 403);
      assert.equal(await oidc.userinfo(ofOrg.token ?? ""), 200);
      assert.equal(await oidc.userinfo(ofWs2.token ?? ""), 200);
      for (const t of await list(org.key, `?provider_id=${SPLIT.slug}`)) {
        assert.equal(t.provider_account_label, null, "no write went through");
      }

      // The organization's key manages a workspace's token.
      assert.equal(
        (await patch(org.key, ofWs2.token_id ?? "", { provider_account_label: "w2" })).statusCode,
        200,
      );
      // An agent of a workspace may use the organization's tokens or its own workspace's, not another's.
      const inWs2 = { "x-tenant-id": ctx.workspace2Id };
      assert.equal((await connect(org.key, "split-agent", ofOrg.token_id ?? "", inWs2)).statusCode, 201);
      assert.equal((await connect(ws2.key, "split-agent-2", ofWs2.token_id ?? "")).statusCode, 201);
      const crossed = await connect(org.key, "split-agent", ofWs2.token_id ?? "");
      assert.equal(crossed.statusCode, 404, crossed.body);
      assert.match(crossed.body, /another workspace/);

      // Deleting every user's tokens of a provider: a workspace's admin its workspace's, the
      // organization's admin every one of the organization.
      const ws1Admin = await newKey(ctx, "admin", ctx.workspaceId);
      const ofWs1 = await obtainToken(ctx, oidc, ask(SPLIT.slug, { user_id: user }), ws1Admin.key);
      const ws2Admin = await newKey(ctx, "admin", ctx.workspace2Id);
      const url = `/v2/auth/tokens?provider_id=${SPLIT.slug}`;
      const inWorkspace = await call(ctx, "DELETE", url, ws2Admin.key);
      assert.equal(inWorkspace.statusCode, 200, inWorkspace.body);
      assert.equal((inWorkspace.json() as { deleted: number }).deleted, 1);
      assert.equal(await oidc.userinfo(ofWs2.token ?? ""), 401);
      assert.equal(await oidc.userinfo(ofOrg.token ?? ""), 200, "the organization's token stays");
      assert.equal(await oidc.userinfo(ofWs1.token ?? ""), 200, "another workspace's token stays");
      const foreign = await call(ctx, "DELETE", url, ctx.other.admin);
      assert.equal(foreign.statusCode, 404, "another organization has no such provider");
      const everywhere = await call(ctx, "DELETE", url, ctx.keys.admin);
      assert.equal(everywhere.statusCode, 200, everywhere.body);
      assert.equal((everywhere.json() as { deleted: number }).deleted, 2);
      assert.equal(await oidc.userinfo(ofOrg.token ?? ""), 401);
      assert.equal(await oidc.userinfo(ofWs1.token ?? ""), 401);
    });

    it("wait: a flow is its tenant's; another workspace's key does not see it", async () => {
      const ctx = suite.ctx;
      const org = await newKey(ctx, "member");
      const ws1 = await newKey(ctx, "member", ctx.workspaceId);
      const ws2 = await newKey(ctx, "member", ctx.workspace2Id);
      const pending = await authenticateAs(ctx, ask(WAIT.slug, { user_id: "w" }), ws2.key);
      const waitAs = async (key: string) => {
        const res = await call(ctx, "GET", `/v2/auth/wait/${pending.auth_id}?timeout=0`, key);
        assert.equal(res.statusCode, 200, res.body);
        return (res.json() as { status: string }).status;
      };
      assert.equal(await waitAs(ws1.key), "not_found");
      assert.equal(await waitAs(ws2.key), "pending");
      assert.equal(await waitAs(org.key), "pending", "the organization's key sees its workspaces' flows");
      const orgFlow = await authenticateAs(ctx, ask(WAIT.slug, { user_id: "w" }), org.key);
      const res = await call(ctx, "GET", `/v2/auth/wait/${orgFlow.auth_id}?timeout=0`, ws2.key);
      assert.equal((res.json() as { status: string }).status, "not_found");
    });
  },
  { env: LOOPBACK_ENV },
);
