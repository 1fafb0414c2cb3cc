import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import { encryptionContext } from "../../../src/crypto/envelope.ts";
import { rows } from "../../../src/db/client.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { detailLocs, type ProviderBody, send, sleep } from "../../helpers/oauth.ts";

const SECRET = `shh-${randomBytes(16).toString("hex")}`;
const NEW_SECRET = `shh-new-${randomBytes(16).toString("hex")}`;

const KEYS = [
  "auth_url",
  "client_id",
  "code_challenge_method",
  "created_at",
  "has_client_secret",
  "id",
  "is_dynamic_client",
  "mcp_server_url",
  "name",
  "organization_id",
  "provider_id",
  "provider_type",
  "token_endpoint_auth_method",
  "token_url",
  "updated_at",
  "uses_pkce",
];

interface Provider {
  id: string;
  organization_id: string;
  provider_id: string;
  name: string;
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
  created_at: string;
  updated_at: string;
}

const body = (over: Partial<ProviderBody> = {}): ProviderBody => ({
  provider_id: "github",
  name: "GitHub",
  client_id: "Iv1.abc",
  client_secret: SECRET,
  auth_url: "https://github.com/login/oauth/authorize",
  token_url: "https://github.com/login/oauth/access_token",
  ...over,
});

async function create(ctx: TestContext, over: Partial<ProviderBody> = {}, key?: string): Promise<Provider> {
  const res = await send(ctx, "POST", "/v2/auth/providers", body(over), key);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Provider;
}

async function count(ctx: TestContext): Promise<number> {
  const [row] = await rows<{ n: number }>(ctx.db.orm, sql`SELECT count(*)::int AS n FROM oauth_providers`);
  return row?.n ?? -1;
}

forEachDatabase("oauth providers", (suite) => {
  it("create → 200 (as the anchor) with every key of the record and the defaults", async () => {
    const ctx = suite.ctx;
    const res = await send(ctx, "POST", "/v2/auth/providers", body());
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json() as Provider;
    assert.deepEqual(Object.keys(p).sort(), KEYS);
    assert.match(p.id, /^[0-9a-f-]{36}$/);
    assert.equal(p.organization_id, ctx.orgId);
    assert.equal(p.provider_id, "github");
    assert.equal(p.uses_pkce, true);
    assert.equal(p.code_challenge_method, "S256");
    assert.equal(p.token_endpoint_auth_method, "client_secret_post");
    assert.equal(p.is_dynamic_client, false);
    assert.equal(p.provider_type, null);
    assert.equal(p.mcp_server_url, null);
    assert.equal(p.has_client_secret, true);
    assert.equal(p.created_at, p.updated_at);
    assert.ok(!res.body.includes(SECRET));
  });

  it("create: PKCE off gives a null method; a public client has no secret; optional fields are kept", async () => {
    const ctx = suite.ctx;
    const noPkce = await create(ctx, { provider_id: "no-pkce", uses_pkce: false });
    assert.equal(noPkce.uses_pkce, false);
    assert.equal(noPkce.code_challenge_method, null);
    const pub = await create(ctx, {
      provider_id: "public_1",
      client_secret: undefined,
      token_endpoint_auth_method: "none",
      provider_type: "mcp",
      mcp_server_url: "https://mcp.example.com/mcp",
    });
    assert.equal(pub.has_client_secret, false);
    assert.equal(pub.token_endpoint_auth_method, "none");
    assert.equal(pub.provider_type, "mcp");
    assert.equal(pub.mcp_server_url, "https://mcp.example.com/mcp");
    const basic = await create(ctx, {
      provider_id: "basic",
      token_endpoint_auth_method: "client_secret_basic",
    });
    assert.equal(basic.token_endpoint_auth_method, "client_secret_basic");
    const explicitNulls = await create(ctx, {
      provider_id: "nulls",
      uses_pkce: null,
      code_challenge_method: null,
      token_endpoint_auth_method: null,
      provider_type: null,
      mcp_server_url: null,
    });
    assert.equal(explicitNulls.uses_pkce, true);
    assert.equal(explicitNulls.code_challenge_method, "S256");
  });

  it("create: provider_id reuse → 409 (another organization may use it)", async () => {
    const ctx = suite.ctx;
    const before = await count(ctx);
    const res = await send(ctx, "POST", "/v2/auth/providers", body({ name: "Again" }));
    assert.equal(res.statusCode, 409);
    assert.match(res.body, /already exists/);
    assert.ok(!res.body.includes(SECRET));
    assert.equal(await count(ctx), before);
    const other = await create(ctx, {}, ctx.other.admin);
    assert.equal(other.organization_id, ctx.other.orgId);
  });

  it("create: each rule → 422 naming the field, and nothing is stored", async () => {
    const ctx = suite.ctx;
    const before = await count(ctx);
    const without = (field: keyof ProviderBody): Partial<ProviderBody> => ({ [field]: undefined });
    const cases: [Partial<ProviderBody> | Record<string, unknown>, string][] = [
      [without("provider_id"), "body.provider_id"],
      [without("name"), "body.name"],
      [without("client_id"), "body.client_id"],
      [without("auth_url"), "body.auth_url"],
      [without("token_url"), "body.token_url"],
      [{ provider_id: "Upper" }, "body.provider_id"],
      [{ provider_id: "has space" }, "body.provider_id"],
      [{ provider_id: "" }, "body.provider_id"],
      [{ provider_id: "x".repeat(65) }, "body.provider_id"],
      [{ name: "" }, "body.name"],
      [{ client_id: "" }, "body.client_id"],
      [{ client_id: 42 }, "body.client_id"],
      [{ auth_url: "http://github.com/login" }, "body.auth_url"],
      [{ auth_url: "http://127.0.0.1:9000/auth" }, "body.auth_url"],
      [{ auth_url: "/relative" }, "body.auth_url"],
      [{ auth_url: "ftp://example.com/x" }, "body.auth_url"],
      [{ auth_url: "https://user:pw@example.com/x" }, "body.auth_url"],
      [{ auth_url: "https://example.com/x#frag" }, "body.auth_url"],
      [{ token_url: "http://example.com/token" }, "body.token_url"],
      [{ token_url: "not a url" }, "body.token_url"],
      [{ client_secret: undefined }, "body.client_secret"],
      [{ client_secret: null, token_endpoint_auth_method: "client_secret_basic" }, "body.client_secret"],
      [{ client_secret: "" }, "body.client_secret"],
      [{ token_endpoint_auth_method: "none" }, "body.client_secret"],
      [{ token_endpoint_auth_method: "none", client_secret: undefined, uses_pkce: false }, "body.uses_pkce"],
      [{ token_endpoint_auth_method: "private_key_jwt" }, "body.token_endpoint_auth_method"],
      [{ uses_pkce: "yes" }, "body.uses_pkce"],
      [{ code_challenge_method: "plain" }, "body.code_challenge_method"],
      [{ code_challenge_method: "S512" }, "body.code_challenge_method"],
      [{ uses_pkce: false, code_challenge_method: "S256" }, "body.code_challenge_method"],
      [{ provider_type: "Not A Slug" }, "body.provider_type"],
      [{ mcp_server_url: "http://mcp.example.com/mcp" }, "body.mcp_server_url"],
    ];
    for (const [over, loc] of cases) {
      const res = await send(ctx, "POST", "/v2/auth/providers", {
        ...body({ provider_id: "new-one" }),
        ...over,
      });
      assert.equal(res.statusCode, 422, `${JSON.stringify(over)}: ${res.body}`);
      assert.ok(detailLocs(res).includes(loc), `${JSON.stringify(over)} → ${detailLocs(res).join(", ")}`);
      assert.ok(!res.body.includes(SECRET), "the secret is never echoed");
    }
    const many = await send(ctx, "POST", "/v2/auth/providers", {
      ...body({ provider_id: "new-one" }),
      auth_url: "http://a.example",
      token_url: "http://b.example",
      code_challenge_method: "plain",
    });
    assert.deepEqual(detailLocs(many).sort(), [
      "body.auth_url",
      "body.code_challenge_method",
      "body.token_url",
    ]);
    const notJson = await ctx.app.inject({
      method: "POST",
      url: "/v2/auth/providers",
      headers: { "x-api-key": ctx.keys.member, "content-type": "text/plain" },
      payload: "hello",
    });
    assert.equal(notJson.statusCode, 415);
    assert.equal(await count(ctx), before);
  });

  it("list: a bare array of the organization's providers, oldest first", async () => {
    const ctx = suite.ctx;
    const res = await send(ctx, "GET", "/v2/auth/providers", undefined, ctx.keys.viewer);
    assert.equal(res.statusCode, 200);
    const list = res.json() as Provider[];
    assert.ok(Array.isArray(list));
    assert.deepEqual(
      list.map((p) => p.provider_id),
      ["github", "no-pkce", "public_1", "basic", "nulls"],
    );
    assert.ok(list.every((p) => p.organization_id === ctx.orgId));
    for (const p of list) assert.deepEqual(Object.keys(p).sort(), KEYS);
    assert.ok(!res.body.includes(SECRET));
    const other = (
      await send(ctx, "GET", "/v2/auth/providers", undefined, ctx.other.admin)
    ).json() as Provider[];
    assert.deepEqual(
      other.map((p) => p.organization_id),
      [ctx.other.orgId],
    );
  });

  it("get: the record; unknown and another organization's → 404", async () => {
    const ctx = suite.ctx;
    const res = await send(ctx, "GET", "/v2/auth/providers/github", undefined, ctx.keys.viewer);
    assert.equal(res.statusCode, 200);
    const p = res.json() as Provider;
    assert.equal(p.organization_id, ctx.orgId);
    assert.equal((await send(ctx, "GET", "/v2/auth/providers/unknown")).statusCode, 404);
    await create(ctx, { provider_id: "theirs" }, ctx.other.admin);
    const theirs = await send(ctx, "GET", "/v2/auth/providers/theirs", undefined, ctx.keys.admin);
    assert.equal(theirs.statusCode, 404);
  });

  it("patch: changes the given fields only; a new secret is encrypted and never echoed", async () => {
    const ctx = suite.ctx;
    const before = (await send(ctx, "GET", "/v2/auth/providers/github")).json() as Provider;
    await sleep(5);
    const res = await send(ctx, "PATCH", "/v2/auth/providers/github", {
      name: "GitHub (org)",
      client_id: null,
      client_secret: NEW_SECRET,
      auth_url: null,
      unknown_field: "ignored",
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.ok(!res.body.includes(NEW_SECRET));
    const after = res.json() as Provider;
    assert.equal(after.name, "GitHub (org)");
    assert.equal(after.client_id, before.client_id);
    assert.equal(after.auth_url, before.auth_url);
    assert.equal(after.has_client_secret, true);
    assert.equal(after.created_at, before.created_at);
    assert.ok(after.updated_at > before.updated_at);
    assert.ok(!("unknown_field" in after));
    const [row] = await rows<{ enc: string }>(
      ctx.db.orm,
      sql`SELECT client_secret_enc AS enc FROM oauth_providers WHERE id = ${after.id}::uuid`,
    );
    assert.ok(row && !row.enc.includes(NEW_SECRET));
    assert.equal(
      ctx.keyring.decrypt(row.enc, encryptionContext("oauth_providers", "client_secret_enc", after.id)),
      NEW_SECRET,
    );
    const empty = await send(ctx, "PATCH", "/v2/auth/providers/github", {});
    assert.equal(empty.statusCode, 200);
    assert.equal((empty.json() as Provider).name, "GitHub (org)");
  });

  it("patch: PKCE switches keep uses_pkce and code_challenge_method consistent", async () => {
    const ctx = suite.ctx;
    const off = (
      await send(ctx, "PATCH", "/v2/auth/providers/github", { uses_pkce: false })
    ).json() as Provider;
    assert.equal(off.uses_pkce, false);
    assert.equal(off.code_challenge_method, null);
    const on = (
      await send(ctx, "PATCH", "/v2/auth/providers/github", { uses_pkce: true })
    ).json() as Provider;
    assert.equal(on.uses_pkce, true);
    assert.equal(on.code_challenge_method, "S256");
    const both = await send(ctx, "PATCH", "/v2/auth/providers/no-pkce", {
      uses_pkce: true,
      code_challenge_method: "S256",
    });
    assert.equal(both.statusCode, 200);
    assert.equal((both.json() as Provider).code_challenge_method, "S256");
  });

  it("patch: the create rules hold on the result (422 naming the field, nothing changed)", async () => {
    const ctx = suite.ctx;
    const before = (await send(ctx, "GET", "/v2/auth/providers/public_1")).json() as Provider;
    await send(ctx, "PATCH", "/v2/auth/providers/no-pkce", { uses_pkce: false });
    const cases: [string, Record<string, unknown>, string][] = [
      ["public_1", { auth_url: "http://example.com/auth" }, "body.auth_url"],
      ["public_1", { token_url: "https://u:p@example.com/token" }, "body.token_url"],
      ["public_1", { client_secret: SECRET }, "body.client_secret"],
      ["public_1", { uses_pkce: false }, "body.uses_pkce"],
      ["public_1", { code_challenge_method: "plain" }, "body.code_challenge_method"],
      ["public_1", { code_challenge_method: "S384" }, "body.code_challenge_method"],
      ["public_1", { name: "" }, "body.name"],
      ["public_1", { client_id: 7 }, "body.client_id"],
      ["public_1", { uses_pkce: "no" }, "body.uses_pkce"],
      ["no-pkce", { code_challenge_method: "S256" }, "body.code_challenge_method"],
      ["no-pkce", { uses_pkce: false, code_challenge_method: "S256" }, "body.code_challenge_method"],
    ];
    for (const [slug, patch, loc] of cases) {
      const res = await send(ctx, "PATCH", `/v2/auth/providers/${slug}`, patch);
      assert.equal(res.statusCode, 422, `${JSON.stringify(patch)}: ${res.body}`);
      assert.ok(detailLocs(res).includes(loc), `${JSON.stringify(patch)} → ${detailLocs(res).join(", ")}`);
      assert.ok(!res.body.includes(SECRET));
    }
    assert.deepEqual((await send(ctx, "GET", "/v2/auth/providers/public_1")).json(), before);
    const noPkce = (await send(ctx, "GET", "/v2/auth/providers/no-pkce")).json() as Provider;
    assert.equal(noPkce.uses_pkce, false);
  });

  it("patch and delete: unknown and another organization's → 404", async () => {
    const ctx = suite.ctx;
    assert.equal((await send(ctx, "PATCH", "/v2/auth/providers/unknown", { name: "x" })).statusCode, 404);
    assert.equal(
      (await send(ctx, "PATCH", "/v2/auth/providers/theirs", { name: "x" }, ctx.keys.admin)).statusCode,
      404,
    );
    assert.equal(
      (await send(ctx, "DELETE", "/v2/auth/providers/theirs", undefined, ctx.keys.admin)).statusCode,
      404,
    );
    const theirs = (
      await send(ctx, "GET", "/v2/auth/providers/theirs", undefined, ctx.other.admin)
    ).json() as Provider;
    assert.equal(theirs.name, "GitHub");
  });

  it("delete → 200 with the deleted record and a message; then 404", async () => {
    const ctx = suite.ctx;
    const before = (await send(ctx, "GET", "/v2/auth/providers/basic")).json() as Provider;
    const res = await send(ctx, "DELETE", "/v2/auth/providers/basic");
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { ...before, message: 'OAuth provider "basic" deleted.' });
    assert.equal((await send(ctx, "GET", "/v2/auth/providers/basic")).statusCode, 404);
    assert.equal((await send(ctx, "DELETE", "/v2/auth/providers/basic")).statusCode, 404);
    const again = await create(ctx, { provider_id: "basic" });
    assert.notEqual(again.id, before.id, "the slug is free again");
  });

  it("the client secret is never in logs", async () => {
    const logs = suite.ctx.readLogs();
    assert.ok(logs.includes("/v2/auth/providers"), "requests were logged");
    assert.ok(!logs.includes(SECRET));
    assert.ok(!logs.includes(NEW_SECRET));
  });

  authMatrix(suite, { method: "GET", url: () => "/v2/auth/providers" });
  authMatrix(suite, {
    method: "POST",
    url: () => "/v2/auth/providers",
    payload: () => body({ provider_id: "matrix" }),
  });
  authMatrix(suite, {
    method: "GET",
    url: () => "/v2/auth/providers/github",
    otherTenantUrl: () => "/v2/auth/providers/theirs",
  });
  authMatrix(suite, {
    method: "PATCH",
    url: () => "/v2/auth/providers/github",
    payload: () => ({ name: "Matrix" }),
    otherTenantUrl: () => "/v2/auth/providers/theirs",
  });
  authMatrix(suite, {
    method: "DELETE",
    url: () => "/v2/auth/providers/github",
    otherTenantUrl: () => "/v2/auth/providers/theirs",
  });
});

forEachDatabase(
  "oauth providers with loopback http and plain PKCE allowed",
  (suite) => {
    it("http is accepted for loopback hosts only", async () => {
      const ctx = suite.ctx;
      for (const host of ["127.0.0.1:9000", "localhost:9000", "[::1]:9000"]) {
        const p = await create(ctx, {
          provider_id: `lo-${host.replace(/[^a-z0-9]/g, "")}`,
          auth_url: `http://${host}/auth`,
          token_url: `http://${host}/token`,
        });
        assert.equal(p.auth_url, `http://${host}/auth`);
      }
      const res = await send(
        ctx,
        "POST",
        "/v2/auth/providers",
        body({ auth_url: "http://example.com/auth" }),
      );
      assert.equal(res.statusCode, 422);
      assert.deepEqual(detailLocs(res), ["body.auth_url"]);
    });

    it("plain PKCE is accepted when the server allows it", async () => {
      const ctx = suite.ctx;
      const p = await create(ctx, { provider_id: "plain", code_challenge_method: "plain" });
      assert.equal(p.code_challenge_method, "plain");
    });
  },
  { env: { SLIPWAY_OAUTH_ALLOW_INSECURE_LOOPBACK: "true", SLIPWAY_OAUTH_ALLOW_PLAIN_PKCE: "true" } },
);
