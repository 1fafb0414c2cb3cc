import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import { encryptionContext } from "../../../src/crypto/envelope.ts";
import { rows } from "../../../src/db/client.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { callback, detailLocs, LOOPBACK_ENV, type Reply, send } from "../../helpers/oauth.ts";
import { closedPort, type OidcServer, startOidcServer } from "../../helpers/oidc-server.ts";

interface Provider {
  provider_id: string;
  client_id: string;
  auth_url: string;
  token_url: string;
  uses_pkce: boolean;
  code_challenge_method: string | null;
  token_endpoint_auth_method: string;
  is_dynamic_client: boolean;
  provider_type: string | null;
  mcp_server_url: string | null;
  has_client_secret: boolean;
}

async function discover(ctx: TestContext, provider_id: string, mcp_server_url: string): Promise<Reply> {
  return send(ctx, "POST", "/v2/auth/providers/mcp-discover", {
    provider_id,
    name: `MCP ${provider_id}`,
    mcp_server_url,
  });
}

async function providerCount(ctx: TestContext): Promise<number> {
  const [row] = await rows<{ n: number }>(ctx.db.orm, sql`SELECT count(*)::int AS n FROM oauth_providers`);
  return row?.n ?? -1;
}

function refusedOn(res: Reply, pattern: RegExp): void {
  assert.equal(res.statusCode, 422, res.body);
  assert.deepEqual(detailLocs(res), ["body.mcp_server_url"]);
  assert.match(res.body, pattern);
}

forEachDatabase(
  "MCP discovery and dynamic client registration",
  (suite) => {
    let oidc: OidcServer;
    before(async () => {
      oidc = await startOidcServer({ clients: [], accessTokenTtl: 3600 });
    });
    after(async () => {
      await oidc?.close();
    });

    it("discovers from the 401 challenge, registers a client, and runs its flow with PKCE and resource", async () => {
      const ctx = suite.ctx;
      const mcpUrl = `${oidc.issuer}/mcp`;
      const res = await discover(ctx, "mcp-main", mcpUrl);
      assert.equal(res.statusCode, 200, res.body);
      const p = res.json() as Provider;
      assert.equal(p.is_dynamic_client, true);
      assert.equal(p.provider_type, "mcp");
      assert.equal(p.mcp_server_url, mcpUrl);
      assert.equal(p.uses_pkce, true);
      assert.equal(p.code_challenge_method, "S256");
      assert.equal(p.auth_url, oidc.authUrl);
      assert.equal(p.token_url, oidc.tokenUrl);
      assert.equal(p.token_endpoint_auth_method, "client_secret_basic");
      assert.equal(p.has_client_secret, true);
      assert.ok(p.client_id.length > 0);
      assert.ok(!("client_secret" in p));

      const pending = (
        await send(ctx, "POST", "/v2/auth/authenticate", {
          user_id: "u1",
          provider: "mcp-main",
          scopes: ["mcp:tools"],
        })
      ).json() as { status: string; url: string; auth_id: string };
      assert.equal(pending.status, "pending");
      const url = new URL(pending.url);
      assert.equal(url.searchParams.get("resource"), mcpUrl);
      assert.equal(url.searchParams.get("code_challenge_method"), "S256");
      const page = await callback(ctx, await oidc.authorize(pending.url));
      assert.equal(page.statusCode, 200, page.body);
      const done = (await send(ctx, "GET", `/v2/auth/wait/${pending.auth_id}?timeout=5`)).json() as {
        status: string;
        token: string;
        token_id: string;
        scopes: string[];
      };
      assert.equal(done.status, "completed");
      assert.deepEqual(done.scopes, ["mcp:tools"]);
      assert.equal(oidc.grantCount(p.client_id, "authorization_code"), 1);

      // Renewal goes to the discovered token endpoint with the registered credentials.
      await ctx.db.orm.execute(
        sql`UPDATE oauth_tokens SET expires_at = now() - interval '1 minute', issued_at = now() - interval '1 hour'
             WHERE id = ${done.token_id}::uuid`,
      );
      const renewed = (
        await send(ctx, "POST", "/v2/auth/authenticate", {
          user_id: "u1",
          provider: "mcp-main",
          scopes: ["mcp:tools"],
        })
      ).json() as { status: string; token: string; token_id: string };
      assert.equal(renewed.status, "completed");
      assert.equal(renewed.token_id, done.token_id);
      assert.notEqual(renewed.token, done.token);
      assert.equal(oidc.grantCount(p.client_id, "refresh_token"), 1);
    });

    it("falls back to the well-known metadata URL when the challenge names none", async () => {
      const res = await discover(suite.ctx, "mcp-plain", `${oidc.issuer}/mcp-plain`);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((res.json() as Provider).is_dynamic_client, true);
    });

    it("provider_id reuse → 409 before anything is registered", async () => {
      const res = await discover(suite.ctx, "mcp-main", `${oidc.issuer}/mcp`);
      assert.equal(res.statusCode, 409);
    });

    it("SSRF: private and metadata addresses are refused (422 on mcp_server_url), nothing stored", async () => {
      const ctx = suite.ctx;
      const before = await providerCount(ctx);
      refusedOn(await discover(ctx, "p1", "https://10.0.0.1/mcp"), /private address/);
      refusedOn(await discover(ctx, "p2", "https://192.168.1.20/mcp"), /private address/);
      refusedOn(await discover(ctx, "p3", "https://169.254.169.254/latest/meta-data/"), /metadata address/);
      refusedOn(await discover(ctx, "p4", "https://[fd00:ec2::254]/"), /metadata address/);
      refusedOn(await discover(ctx, "p5", "http://example.com/mcp"), /https/);
      assert.equal(await providerCount(ctx), before);
    });

    it("SSRF: a redirect to a private address is refused", async () => {
      refusedOn(await discover(suite.ctx, "p6", `${oidc.issuer}/mcp-redirect`), /10\.255\.255\.1|only https/);
    });

    it("SSRF: an authorization server on a private address is refused", async () => {
      refusedOn(await discover(suite.ctx, "p7", `${oidc.issuer}/mcp-private-as`), /10\.0\.0\.7.*private/);
    });

    it("metadata for another resource, or none at all, is refused", async () => {
      refusedOn(await discover(suite.ctx, "p8", `${oidc.issuer}/mcp-other-resource`), /another resource/);
      refusedOn(
        await discover(suite.ctx, "p9", `${oidc.issuer}/mcp-nothing`),
        /no protected resource metadata/,
      );
    });

    it("an MCP server that cannot be reached → 502", async () => {
      const res = await discover(suite.ctx, "p10", `http://127.0.0.1:${await closedPort()}/mcp`);
      assert.equal(res.statusCode, 502, res.body);
      assert.match(res.body, /connection refused/);
    });

    it("validation: each field → 422", async () => {
      const ctx = suite.ctx;
      const good = { provider_id: "v", name: "V", mcp_server_url: `${oidc.issuer}/mcp` };
      const cases: [Record<string, unknown>, string][] = [
        [{ ...good, provider_id: undefined }, "body.provider_id"],
        [{ ...good, provider_id: "Not Ok" }, "body.provider_id"],
        [{ ...good, name: undefined }, "body.name"],
        [{ ...good, name: "" }, "body.name"],
        [{ ...good, mcp_server_url: undefined }, "body.mcp_server_url"],
        [{ ...good, mcp_server_url: "not a url" }, "body.mcp_server_url"],
        [{ ...good, mcp_server_url: 5 }, "body.mcp_server_url"],
      ];
      for (const [body, loc] of cases) {
        const res = await send(ctx, "POST", "/v2/auth/providers/mcp-discover", body);
        assert.equal(res.statusCode, 422, res.body);
        assert.ok(detailLocs(res).includes(loc), `${JSON.stringify(body)} → ${detailLocs(res).join(", ")}`);
      }
    });

    it("the registered client secret is stored encrypted and never logged", async () => {
      const ctx = suite.ctx;
      const [row] = await rows<{ id: string; enc: string }>(
        ctx.db.orm,
        sql`SELECT id::text AS id, client_secret_enc AS enc FROM oauth_providers WHERE provider_id = 'mcp-main'`,
      );
      assert.ok(row);
      const secret = ctx.keyring.decrypt(
        row.enc,
        encryptionContext("oauth_providers", "client_secret_enc", row.id),
      );
      assert.ok(secret.length >= 16);
      assert.ok(!row.enc.includes(secret));
      assert.ok(!ctx.readLogs().includes(secret));
      const listed = await send(ctx, "GET", "/v2/auth/providers");
      assert.ok(!listed.body.includes(secret));
    });

    authMatrix(suite, {
      method: "POST",
      url: () => "/v2/auth/providers/mcp-discover",
      payload: () => ({ provider_id: "matrix", name: "M", mcp_server_url: "https://10.0.0.1/mcp" }),
    });
  },
  { env: LOOPBACK_ENV },
);

forEachDatabase("MCP discovery without loopback", (suite) => {
  it("SSRF: loopback is refused when not allowed, by name and by address", async () => {
    const ctx = suite.ctx;
    refusedOn(await discover(ctx, "l1", "http://127.0.0.1:9/mcp"), /https/);
    refusedOn(
      await discover(ctx, "l2", "https://localhost:9/mcp"),
      /localhost resolves to a loopback address/,
    );
    refusedOn(await discover(ctx, "l3", "https://127.0.0.1:9/mcp"), /loopback address/);
    refusedOn(await discover(ctx, "l4", "https://[::1]:9/mcp"), /loopback address/);
    assert.equal(await providerCount(ctx), 0);
  });
});
