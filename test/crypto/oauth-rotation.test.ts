import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import { encryptionContext, Keyring } from "../../src/crypto/envelope.ts";
import { rotateSecrets } from "../../src/crypto/rotate.ts";
import { rows } from "../../src/db/client.ts";
import { oauthFlows } from "../../src/db/schema/oauth.ts";
import { envelopeColumns } from "../../src/resources/envelopes.ts";
import { insertProvider } from "../../src/resources/oauth-providers/service.ts";
import { saveTokens } from "../../src/resources/oauth-tokens/seal.ts";
import { forEachDatabase } from "../helpers/harness.ts";

forEachDatabase("oauth secrets and key rotation", (suite) => {
  it("client secrets, tokens and PKCE verifiers are registered, so rotation re-wraps them", async () => {
    const ctx = suite.ctx;
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const before = new Keyring(oldKey);
    const provider = await insertProvider(ctx.db.orm, before, ctx.orgId, {
      providerId: "rotated",
      name: "Rotated",
      clientId: "c",
      clientSecret: "the-client-secret",
      authUrl: "https://idp.example.com/auth",
      tokenUrl: "https://idp.example.com/token",
      usesPkce: true,
      codeChallengeMethod: "S256",
      tokenEndpointAuthMethod: "client_secret_post",
      providerType: null,
      mcpServerUrl: null,
      isDynamicClient: false,
      issuer: null,
    });
    const token = await saveTokens(
      ctx.db.orm,
      before,
      {
        organizationId: ctx.orgId,
        tenantWorkspaceId: null,
        providerRef: provider.id,
        userId: "u",
        agentId: "",
      },
      {
        accessToken: "the-access-token",
        tokenType: "bearer",
        refreshToken: "the-refresh-token",
        expiresIn: 60,
        scope: null,
      },
      ["openid"],
      "https://idp.example.com",
      { targetId: null, makeDefault: true, workspaceId: null },
    );
    const flowId = randomUUID();
    await ctx.db.orm.insert(oauthFlows).values({
      id: flowId,
      organizationId: ctx.orgId,
      providerRef: provider.id,
      userId: "u",
      scopes: [],
      stateHash: randomBytes(32).toString("hex"),
      codeVerifierEnc: before.encrypt(
        "the-verifier",
        encryptionContext("oauth_flows", "code_verifier_enc", flowId),
      ),
      redirectUri: "https://slipway.example.test/v2/auth/callback/rotated",
      expiresAt: new Date(Date.now() + 60_000),
    });

    const ours = envelopeColumns(ctx.db.orm).filter((c) => c.table.startsWith("oauth_"));
    assert.deepEqual(ours.map((c) => `${c.table}.${c.column}`).sort(), [
      "oauth_flows.code_verifier_enc",
      "oauth_providers.client_secret_enc",
      "oauth_tokens.access_token_enc",
      "oauth_tokens.refresh_token_enc",
    ]);
    const after = new Keyring(newKey, [oldKey]);
    const result = await rotateSecrets(after, ours);
    assert.deepEqual(
      result.map((r) => r.rewrapped),
      ours.map(() => 1),
    );

    const only = new Keyring(newKey);
    const [p] = await rows<{ v: string }>(
      ctx.db.orm,
      sql`SELECT client_secret_enc AS v FROM oauth_providers WHERE id = ${provider.id}::uuid`,
    );
    const [t] = await rows<{ a: string; r: string }>(
      ctx.db.orm,
      sql`SELECT access_token_enc AS a, refresh_token_enc AS r FROM oauth_tokens WHERE id = ${token.id}::uuid`,
    );
    const [f] = await rows<{ v: string }>(
      ctx.db.orm,
      sql`SELECT code_verifier_enc AS v FROM oauth_flows WHERE id = ${flowId}::uuid`,
    );
    assert.ok(p && t && f);
    assert.equal(
      only.decrypt(p.v, encryptionContext("oauth_providers", "client_secret_enc", provider.id)),
      "the-client-secret",
    );
    assert.equal(
      only.decrypt(t.a, encryptionContext("oauth_tokens", "access_token_enc", token.id)),
      "the-access-token",
    );
    assert.equal(
      only.decrypt(t.r, encryptionContext("oauth_tokens", "refresh_token_enc", token.id)),
      "the-refresh-token",
    );
    assert.equal(
      only.decrypt(f.v, encryptionContext("oauth_flows", "code_verifier_enc", flowId)),
      "the-verifier",
    );
  });
});
