import * as oauth from "oauth4webapi";
import { clientAuth, describe, OAuthCallFailed, type ProviderClient, transport } from "./client.ts";
import { authorizationServer, DiscoveryFailed } from "./mcp-discovery.ts";
import { FetchRefused, type SafeFetch } from "./safe-fetch.ts";
import { urlProblem } from "./url-policy.ts";

/**
 * The issuer's RFC 7009 revocation endpoint, from its RFC 8414 / OpenID metadata. Null when the
 * server publishes no usable metadata or no revocation endpoint, or when the SSRF rules refuse it
 * (a lasting condition): such a token cannot be revoked, only forgotten. A server that cannot be
 * reached is an OAuthCallFailed (unreachable).
 */
export async function revocationEndpoint(
  fetch: SafeFetch,
  issuer: string,
  allowLoopback: boolean,
): Promise<string | null> {
  if (urlProblem(issuer, allowLoopback) !== null) return null;
  let meta: oauth.AuthorizationServer;
  try {
    meta = await authorizationServer(fetch, issuer);
  } catch (err) {
    if (err instanceof DiscoveryFailed || err instanceof FetchRefused) return null;
    throw describe(err, "authorization server");
  }
  const endpoint = meta.revocation_endpoint;
  if (typeof endpoint !== "string" || urlProblem(endpoint, allowLoopback) !== null) return null;
  return endpoint;
}

export type TokenHint = "refresh_token" | "access_token";

/**
 * Revokes one token at the endpoint (RFC 7009), authenticating as the provider's client. A server
 * that does not revoke this kind of token (`unsupported_token_type`) is not an error: there is
 * nothing more to do for it. An endpoint the SSRF rules refuse is a FetchRefused; any other
 * refusal or a network failure is an OAuthCallFailed.
 */
export async function revokeToken(
  p: ProviderClient,
  fetch: SafeFetch,
  input: { issuer: string; endpoint: string; token: string; hint: TokenHint },
): Promise<void> {
  const as: oauth.AuthorizationServer = { issuer: input.issuer, revocation_endpoint: input.endpoint };
  const client: oauth.Client = { client_id: p.clientId };
  try {
    const response = await oauth.revocationRequest(as, client, clientAuth(p), input.token, {
      ...transport(fetch, input.endpoint),
      additionalParameters: { token_type_hint: input.hint },
    });
    await oauth.processRevocationResponse(response);
  } catch (err) {
    if (err instanceof FetchRefused) throw err;
    const failed = describe(err, "revocation endpoint");
    if (failed instanceof OAuthCallFailed && failed.oauthError === "unsupported_token_type") return;
    throw failed;
  }
}
