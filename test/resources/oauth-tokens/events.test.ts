import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import { encryptionContext } from "../../../src/crypto/envelope.ts";
import { WebhookDispatcher } from "../../../src/resources/webhooks/dispatcher.ts";
import { eventually } from "../../helpers/eventually.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { type AuthAnswer, callback, LOOPBACK_ENV, send } from "../../helpers/oauth.ts";
import { type Standin, startStandin } from "../../helpers/oauth-provider-standins.ts";
import { SseClient } from "../../helpers/sse.ts";
import { WebhookReceiver } from "../../helpers/webhook-receiver.ts";

const TYPES = ["oauth.token.created", "oauth.token.refresh_failed", "oauth.token.revoked"];
const SLUG = "google-app";

interface Hook {
  id: string;
  secret: string;
}
type Got = { type: string; data: Record<string, unknown> };

forEachDatabase(
  "oauth token events to webhooks and the event stream",
  (suite) => {
    let s: Standin;
    let dispatcher: WebhookDispatcher;
    const receivers: WebhookReceiver[] = [];
    const hooks: Hook[] = [];
    let streams: SseClient[] = [];
    const ctx = (): TestContext => suite.ctx;
    /** What workspace 1 (index 0) or workspace 2 (index 1) got, by webhook and by stream. */
    const hooked = (i: number): Got[] =>
      (receivers[i]?.accepted(hooks[i]?.secret ?? "") ?? []).filter((e) => e.type.startsWith("oauth.token."));

    const obtain = async (user: string): Promise<AuthAnswer & { token_id: string }> => {
      const pending = (
        await send(ctx(), "POST", "/v2/auth/authenticate", {
          provider: SLUG,
          user_id: user,
          scopes: ["openid"],
        })
      ).json() as AuthAnswer;
      const page = await callback(ctx(), s.authorize(pending.url ?? ""));
      assert.equal(page.statusCode, 200, page.body);
      return (await send(ctx(), "GET", `/v2/auth/wait/${pending.auth_id}?timeout=5`)).json() as AuthAnswer & {
        token_id: string;
      };
    };
    /** Makes the provider refuse the token's refresh for good, then has it refreshed. */
    const breakToken = async (id: string, user: string) => {
      const bogus = ctx().keyring.encrypt(
        "never-issued",
        encryptionContext("oauth_tokens", "refresh_token_enc", id),
      );
      await ctx().db.orm.execute(
        sql`UPDATE oauth_tokens SET refresh_token_enc = ${bogus}, expires_at = now() - interval '1 minute' WHERE id = ${id}::uuid`,
      );
      const next = await send(ctx(), "POST", "/v2/auth/authenticate", {
        provider: SLUG,
        user_id: user,
        scopes: ["openid"],
      });
      assert.equal((next.json() as AuthAnswer).status, "pending");
    };

    before(async () => {
      s = await startStandin("google");
      const res = await send(ctx(), "POST", "/v2/auth/providers", {
        provider_id: SLUG,
        template: "google",
        client_id: s.clientId,
        client_secret: s.clientSecret,
        auth_url: s.authUrl,
        token_url: s.tokenUrl,
      });
      assert.equal(res.statusCode, 200, res.body);
      dispatcher = new WebhookDispatcher({
        db: ctx().db,
        keyring: ctx().keyring,
        allowPrivate: true,
        log: { warn: () => {} },
        retryBaseMs: 50,
        pollMs: 50,
      });
      await dispatcher.start();
      const base = await ctx().app.listen({ port: 0, host: "127.0.0.1" });
      for (const ws of [ctx().workspaceId, ctx().workspace2Id]) {
        const receiver = await new WebhookReceiver().start();
        receivers.push(receiver);
        // Webhooks are a workspace's: X-Tenant-Id picks which.
        const hook = await ctx().app.inject({
          method: "POST",
          url: "/v2/webhooks",
          headers: { "x-api-key": ctx().keys.admin, "x-tenant-id": ws, "content-type": "application/json" },
          payload: JSON.stringify({ url: receiver.url, events: TYPES }),
        });
        assert.equal(hook.statusCode, 201, hook.body);
        hooks.push(hook.json() as Hook);
      }
      const query = `?${TYPES.map((t) => `types=${t}`).join("&")}`;
      streams = [
        await SseClient.open(`${base}/v2/events${query}`, { "x-api-key": ctx().keys.viewer }),
        await SseClient.open(`${base}/v2/events${query}`, {
          "x-api-key": ctx().keys.viewer,
          "x-tenant-id": ctx().workspace2Id,
        }),
      ];
    });
    after(async () => {
      for (const st of streams) st.close();
      await dispatcher?.stop();
      for (const r of receivers) await r.close();
      await s?.close();
    });

    it("created, refresh_failed and revoked reach the workspace the token was obtained in, and only it", async () => {
      const done = await obtain("ev-1");
      await breakToken(done.token_id, "ev-1");
      const del = await send(ctx(), "DELETE", `/v2/auth/tokens/${done.token_id}`);
      assert.equal(del.statusCode, 204, del.body);

      await eventually("three events at workspace 1's webhook", () => hooked(0).length === 3, 30_000);
      const [created, failed, revoked] = hooked(0);
      assert.deepEqual(
        [created?.type, failed?.type, revoked?.type],
        ["oauth.token.created", "oauth.token.refresh_failed", "oauth.token.revoked"],
      );
      for (const e of [created, failed, revoked]) {
        assert.equal(e?.data.token_id, done.token_id);
        assert.equal(e?.data.provider_id, SLUG);
        assert.equal(e?.data.user_id, "ev-1");
        assert.equal(e?.data.tenant_id, ctx().workspaceId);
        assert.ok(!JSON.stringify(e).includes(done.token ?? "no-token"), "never the token");
      }
      assert.match(String(failed?.data.reason), /invalid_grant/);
      const streamed = await streams[0]?.collect((e) => e.event === "oauth.token.revoked");
      assert.deepEqual(
        streamed?.map((e) => e.event),
        ["oauth.token.created", "oauth.token.refresh_failed", "oauth.token.revoked"],
      );
      assert.equal(hooked(1).length, 0, "another workspace hears nothing");
    });

    it("a token obtained in no workspace tells every workspace of its organization", async () => {
      const done = await obtain("ev-2");
      await ctx().db.orm.execute(
        sql`UPDATE oauth_tokens SET workspace_id = NULL WHERE id = ${done.token_id}::uuid`,
      );
      await breakToken(done.token_id, "ev-2");
      const failedFor = (i: number) =>
        hooked(i).filter((e) => e.type === "oauth.token.refresh_failed" && e.data.token_id === done.token_id);
      await eventually(
        "refresh_failed at both webhooks",
        () => failedFor(0).length + failedFor(1).length === 2,
        30_000,
      );
      assert.equal(failedFor(0).length, 1);
      assert.equal(failedFor(1)[0]?.data.tenant_id, ctx().workspace2Id);
      const second = await streams[1]?.collect((e) => e.event === "oauth.token.refresh_failed");
      assert.ok(second?.some((e) => e.data.includes(done.token_id)));
    });
  },
  { env: { ...LOOPBACK_ENV, SLIPWAY_WEBHOOKS_ALLOW_PRIVATE: "true" } },
);
