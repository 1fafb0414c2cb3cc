import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import { rows } from "../../../src/db/client.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import {
  type AuthAnswer,
  authenticateAs,
  clientSpec,
  createProviderFor,
  detailLocs,
  LOOPBACK_ENV,
  newKey,
  send,
} from "../../helpers/oauth.ts";
import { type OidcServer, startOidcServer } from "../../helpers/oidc-server.ts";

const client = (slug: string) => ({ slug, secret: `secret-${slug}-${randomBytes(12).toString("hex")}` });
const MAIN = client("fin-main");
const SECOND = client("fin-second");

async function flowStatus(ctx: TestContext, authId: string): Promise<{ status: string; consumed: boolean }> {
  const [row] = await rows<{ status: string; consumed: boolean }>(
    ctx.db.orm,
    sql`SELECT status, consumed_at IS NOT NULL AS consumed FROM oauth_flows WHERE id = ${authId}::uuid`,
  );
  assert.ok(row, "the flow exists");
  return row;
}

async function tokenCount(ctx: TestContext, userId: string): Promise<number> {
  const [row] = await rows<{ n: number }>(
    ctx.db.orm,
    sql`SELECT count(*)::int AS n FROM oauth_tokens WHERE user_id = ${userId}`,
  );
  return row?.n ?? -1;
}

forEachDatabase(
  "oauth callback (POST form) and setup landing",
  (suite) => {
    let oidc: OidcServer;
    /** A started flow for an end user of its own, and where the provider sends the browser back. */
    const startAndConsent = async (key: string, slug = MAIN.slug) => {
      const user = `user-${randomUUID()}`;
      const ask = { provider: slug, scopes: ["openid"], user_id: user };
      const pending = await authenticateAs(suite.ctx, ask, key);
      assert.equal(pending.status, "pending");
      const redirect = await oidc.authorize(pending.url ?? "");
      const code = redirect.searchParams.get("code") ?? "";
      const state = redirect.searchParams.get("state") ?? "";
      assert.ok(code && state);
      return { pending, redirect, code, state, authId: pending.auth_id ?? "", user };
    };
    const wait = async (authId: string, key: string) =>
      (
        await send(suite.ctx, "GET", `/v2/auth/wait/${authId}?timeout=0`, undefined, key)
      ).json() as AuthAnswer;

    before(async () => {
      oidc = await startOidcServer({ clients: [MAIN, SECOND].map(clientSpec) });
      await createProviderFor(suite.ctx, oidc, MAIN);
      await createProviderFor(suite.ctx, oidc, SECOND);
    });
    after(async () => {
      await oidc?.close();
    });

    it("POST /v2/auth/callback/{provider_id} {code, state} finishes the flow → 200", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const { code, state, authId } = await startAndConsent(me.key);
      const res = await send(ctx, "POST", `/v2/auth/callback/${MAIN.slug}`, { code, state }, me.key);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), { status: "completed", auth_id: authId });
      const done = await wait(authId, me.key);
      assert.equal(done.status, "completed");
      assert.equal(await oidc.userinfo(done.token ?? ""), 200, "the provider accepts the stored token");
      const replay = await send(ctx, "POST", `/v2/auth/callback/${MAIN.slug}`, { code, state }, me.key);
      assert.equal(replay.statusCode, 400);
      assert.match((replay.json() as { detail: string }).detail, /already used/);
      assert.ok(!ctx.readLogs().includes(code), "the code is not logged");
    });

    it("POST: a state of another organization is not found and the flow stays usable", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const { code, state, authId, redirect } = await startAndConsent(me.key);
      const foreign = await send(
        ctx,
        "POST",
        `/v2/auth/callback/${MAIN.slug}`,
        { code, state },
        ctx.other.admin,
      );
      assert.equal(foreign.statusCode, 400, foreign.body);
      assert.deepEqual(await flowStatus(ctx, authId), { status: "pending", consumed: false });
      const forged = await send(
        ctx,
        "POST",
        `/v2/auth/callback/${MAIN.slug}`,
        { code, state: randomBytes(32).toString("base64url") },
        me.key,
      );
      assert.equal(forged.statusCode, 400);
      assert.deepEqual(await flowStatus(ctx, authId), { status: "pending", consumed: false });
      // The browser's own redirect still finishes it.
      const page = await ctx.app.inject({ method: "GET", url: `${redirect.pathname}${redirect.search}` });
      assert.equal(page.statusCode, 200, page.body);
      assert.equal((await wait(authId, me.key)).status, "completed");
    });

    it("POST: a flow a workspace-bound key does not see (the organization's) is not found for it", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const { code, state, authId, user } = await startAndConsent(me.key);
      const bound = await send(
        ctx,
        "POST",
        `/v2/auth/callback/${MAIN.slug}`,
        { code, state },
        ctx.keys.boundMember,
      );
      assert.equal(bound.statusCode, 400, bound.body);
      assert.deepEqual(await flowStatus(ctx, authId), { status: "pending", consumed: false });
      assert.equal(await tokenCount(ctx, user), 0);
      const own = await send(ctx, "POST", `/v2/auth/callback/${MAIN.slug}`, { code, state }, me.key);
      assert.equal(own.statusCode, 200, own.body);
      assert.equal(await tokenCount(ctx, user), 1);
    });

    it("POST: another provider's path fails the flow; nothing is stored", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const { code, state, authId, user } = await startAndConsent(me.key);
      const res = await send(ctx, "POST", `/v2/auth/callback/${SECOND.slug}`, { code, state }, me.key);
      assert.equal(res.statusCode, 400);
      assert.match(res.body, /another provider/);
      const failed = await wait(authId, me.key);
      assert.equal(failed.status, "failed");
      assert.equal(await tokenCount(ctx, user), 0);
    });

    it("POST: bad bodies → 422, a viewer → 403; neither touches the flow", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const { code, state, authId } = await startAndConsent(me.key);
      for (const [body, locs] of [
        [{}, ["body.code", "body.state"]],
        [{ code }, ["body.state"]],
        [{ code: "", state }, ["body.code"]],
        [{ code, state: 5 }, ["body.state"]],
        [{ code, state: "s".repeat(513) }, ["body.state"]],
      ] as const) {
        const res = await send(ctx, "POST", `/v2/auth/callback/${MAIN.slug}`, body, me.key);
        assert.equal(res.statusCode, 422, JSON.stringify(body));
        assert.deepEqual(detailLocs(res).sort(), [...locs]);
      }
      const viewer = await send(
        ctx,
        "POST",
        `/v2/auth/callback/${MAIN.slug}`,
        { code, state },
        ctx.keys.viewer,
      );
      assert.equal(viewer.statusCode, 403);
      assert.deepEqual(await flowStatus(ctx, authId), { status: "pending", consumed: false });
    });

    it("GET /v2/auth/setup: without a state nothing happens; with one it finishes the flow", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const { code, state, authId, user } = await startAndConsent(me.key);
      const get = (query: string) =>
        ctx.app.inject({ method: "GET", url: `/v2/auth/setup/${MAIN.slug}${query}` });

      const bare = await get("");
      assert.equal(bare.statusCode, 200);
      assert.match(String(bare.headers["content-type"]), /^text\/html/);
      assert.match(bare.body, /Setup received/);
      const update = await get("?setup_action=update&installation_id=42");
      assert.equal(update.statusCode, 200);
      assert.match(update.body, /Installation updated/);
      const codeOnly = await get(`?code=${encodeURIComponent(code)}&installation_id=42`);
      assert.equal(codeOnly.statusCode, 200, "a code without a state is not exchanged");
      assert.deepEqual(await flowStatus(ctx, authId), { status: "pending", consumed: false });
      assert.equal((await get("?installation_id=abc")).statusCode, 422);
      assert.equal((await get("?installation_id=-1")).statusCode, 422);
      const unknown = await get(`?code=${encodeURIComponent(code)}&state=${randomUUID()}`);
      assert.equal(unknown.statusCode, 400);
      assert.ok(!unknown.body.includes(code), "nothing of the request is echoed");
      assert.deepEqual(await flowStatus(ctx, authId), { status: "pending", consumed: false });

      const done = await get(
        `?code=${encodeURIComponent(code)}&state=${encodeURIComponent(state)}&setup_action=install&installation_id=42`,
      );
      assert.equal(done.statusCode, 200, done.body);
      assert.match(done.body, /Authorization complete/);
      assert.equal((await wait(authId, me.key)).status, "completed");
      assert.equal(await tokenCount(ctx, user), 1);
    });

    it("GET /v2/auth/setup: a refusal with a state fails that flow; its text is escaped", async () => {
      const ctx = suite.ctx;
      const me = await newKey(ctx);
      const ask = { provider: MAIN.slug, scopes: ["openid"], user_id: `user-${randomUUID()}` };
      const pending = await authenticateAs(ctx, ask, me.key);
      const state = new URL(pending.url ?? "").searchParams.get("state") ?? "";
      const query = new URLSearchParams({ state, error: "access_denied", error_description: "<b>no</b>" });
      const res = await ctx.app.inject({ method: "GET", url: `/v2/auth/setup/${MAIN.slug}?${query}` });
      assert.equal(res.statusCode, 400);
      assert.ok(res.body.includes("&lt;b&gt;no&lt;/b&gt;"));
      assert.ok(!res.body.includes("<b>no"));
      const failed = await wait(pending.auth_id ?? "", me.key);
      assert.equal(failed.status, "failed");
      assert.match(failed.reason ?? "", /access_denied/);
    });

    authMatrix(suite, {
      method: "POST",
      url: () => `/v2/auth/callback/${MAIN.slug}`,
      payload: () => ({ code: "c", state: "s" }),
    });
  },
  { env: LOOPBACK_ENV },
);
