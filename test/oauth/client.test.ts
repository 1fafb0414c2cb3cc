import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import { authorizationUrl, newCodeVerifier, type ProviderClient } from "../../src/oauth/client.ts";
import { resourceMetadataFromChallenge, wellKnownResourceUrls } from "../../src/oauth/mcp-discovery.ts";

const base: ProviderClient = {
  clientId: "client 1",
  clientSecret: null,
  authUrl: "https://idp.example.com/authorize?audience=api&prompt=consent",
  tokenUrl: "https://idp.example.com/token",
  tokenEndpointAuthMethod: "none",
  usesPkce: true,
  codeChallengeMethod: "S256",
  issuer: null,
  mcpServerUrl: null,
};

describe("OAuth client helpers", () => {
  it("builds the authorization URL, keeping the provider's own query parameters", async () => {
    const verifier = newCodeVerifier();
    const url = new URL(
      await authorizationUrl(base, {
        redirectUri: "https://slipway.example.test/v2/auth/callback/x",
        state: "st",
        scopes: ["openid", "repo:read"],
        codeVerifier: verifier,
      }),
    );
    const q = url.searchParams;
    assert.equal(q.get("audience"), "api");
    assert.equal(q.get("prompt"), "consent");
    assert.equal(q.get("client_id"), "client 1");
    assert.equal(q.get("scope"), "openid repo:read");
    assert.equal(q.get("code_challenge_method"), "S256");
    assert.equal(q.get("code_challenge"), createHash("sha256").update(verifier).digest("base64url"));
    assert.equal(q.has("resource"), false);
  });

  it("plain PKCE sends the verifier; no PKCE sends no challenge; MCP providers send the resource", async () => {
    const input = {
      redirectUri: "https://s.example/cb",
      state: "st",
      scopes: [],
      codeVerifier: "v".repeat(43),
    };
    const plain = new URL(await authorizationUrl({ ...base, codeChallengeMethod: "plain" }, input))
      .searchParams;
    assert.equal(plain.get("code_challenge"), "v".repeat(43));
    assert.equal(plain.get("code_challenge_method"), "plain");
    assert.equal(plain.has("scope"), false);
    const none = new URL(
      await authorizationUrl(
        { ...base, usesPkce: false, codeChallengeMethod: null },
        { ...input, codeVerifier: null },
      ),
    ).searchParams;
    assert.equal(none.has("code_challenge"), false);
    const mcp = new URL(
      await authorizationUrl({ ...base, mcpServerUrl: "https://mcp.example.com/mcp" }, input),
    ).searchParams;
    assert.equal(mcp.get("resource"), "https://mcp.example.com/mcp");
  });

  it("reads resource_metadata from a Bearer challenge", () => {
    assert.equal(
      resourceMetadataFromChallenge(
        'Bearer realm="x", resource_metadata="https://a.example/.well-known/x", scope="s"',
      ),
      "https://a.example/.well-known/x",
    );
    assert.equal(
      resourceMetadataFromChallenge("Bearer resource_metadata=https://a.example/m"),
      "https://a.example/m",
    );
    assert.equal(resourceMetadataFromChallenge('Bearer error="invalid_token"'), null);
    assert.equal(resourceMetadataFromChallenge(null), null);
  });

  it("puts the RFC 9728 well-known suffix before the resource path", () => {
    assert.deepEqual(wellKnownResourceUrls(new URL("https://mcp.example.com/v1/mcp/")), [
      "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp",
      "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]);
    assert.deepEqual(wellKnownResourceUrls(new URL("https://mcp.example.com")), [
      "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]);
  });
});
