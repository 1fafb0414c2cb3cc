import * as oauth from "oauth4webapi";
import type { CodeChallengeMethod, TokenEndpointAuthMethod } from "../db/schema/oauth.ts";
import type { TemplateQuirks } from "./catalog.ts";
import { quirkyFetch } from "./quirks.ts";
import { FetchFailed, FetchRefused, type SafeFetch } from "./safe-fetch.ts";

/** What the client side of a flow needs to know about one provider (secret in the clear). */
export interface ProviderClient {
  clientId: string;
  clientSecret: string | null;
  authUrl: string;
  tokenUrl: string;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  usesPkce: boolean;
  codeChallengeMethod: CodeChallengeMethod | null;
  /** Known when discovered; otherwise learned from the authorization response. */
  issuer: string | null;
  /** For MCP servers: sent as the RFC 8707 `resource` so tokens are minted for that server. */
  mcpServerUrl: string | null;
  /** A catalog template's quirks (made from a template), else null. */
  quirks?: TemplateQuirks | null;
}

export interface TokenSet {
  accessToken: string;
  tokenType: string;
  refreshToken: string | null;
  /** Seconds, when the server said. */
  expiresIn: number | null;
  /** Granted scopes, when the server said (otherwise they are the requested ones). */
  scope: string[] | null;
}

/** A token endpoint or authorization server said no, or could not be reached. */
export class OAuthCallFailed extends Error {
  constructor(
    message: string,
    /** The OAuth error code (`invalid_grant`, ...), when the server gave one. */
    readonly oauthError: string | null,
    /** The server could not be reached or answered unusably (as opposed to refusing). */
    readonly unreachable: boolean,
  ) {
    super(message);
  }
}

export function clientAuth(p: ProviderClient): oauth.ClientAuth {
  switch (p.tokenEndpointAuthMethod) {
    case "none":
      return oauth.None();
    case "client_secret_basic":
      return oauth.ClientSecretBasic(p.clientSecret ?? "");
    default:
      return oauth.ClientSecretPost(p.clientSecret ?? "");
  }
}

function server(p: ProviderClient, issuer: string): oauth.AuthorizationServer {
  return { issuer, authorization_endpoint: p.authUrl, token_endpoint: p.tokenUrl };
}

export function transport(fetch: SafeFetch, url: string) {
  return {
    [oauth.customFetch]: fetch,
    // http is only ever configured for loopback hosts, and only when the operator allowed it.
    [oauth.allowInsecureRequests]: url.startsWith("http:"),
  };
}

function resourceParams(p: ProviderClient): Record<string, string> | undefined {
  return p.mcpServerUrl === null ? undefined : { resource: p.mcpServerUrl };
}

/** The authorization URL a person opens: code flow with state, PKCE challenge and scopes. */
export async function authorizationUrl(
  p: ProviderClient,
  input: { redirectUri: string; state: string; scopes: string[]; codeVerifier: string | null },
): Promise<string> {
  const url = new URL(p.authUrl);
  const q = url.searchParams;
  q.set("response_type", "code");
  q.set("client_id", p.clientId);
  q.set("redirect_uri", input.redirectUri);
  const quirks = p.quirks ?? null;
  if (input.scopes.length > 0) {
    q.set(quirks?.scope_param ?? "scope", input.scopes.join(quirks?.scope_separator ?? " "));
  }
  for (const [name, value] of Object.entries(quirks?.auth_params ?? {})) q.set(name, value);
  q.set("state", input.state);
  if (p.usesPkce && input.codeVerifier !== null) {
    const plain = p.codeChallengeMethod === "plain";
    q.set(
      "code_challenge",
      plain ? input.codeVerifier : await oauth.calculatePKCECodeChallenge(input.codeVerifier),
    );
    q.set("code_challenge_method", plain ? "plain" : "S256");
  }
  if (p.mcpServerUrl !== null) q.set("resource", p.mcpServerUrl);
  return url.href;
}

export function newCodeVerifier(): string {
  return oauth.generateRandomCodeVerifier();
}

export function newState(): string {
  return oauth.generateRandomState();
}

function toTokenSet(r: oauth.TokenEndpointResponse): TokenSet {
  return {
    accessToken: r.access_token,
    tokenType: r.token_type,
    refreshToken: r.refresh_token ?? null,
    expiresIn: typeof r.expires_in === "number" ? r.expires_in : null,
    scope: typeof r.scope === "string" ? r.scope.split(" ").filter(Boolean) : null,
  };
}

/** A sentence for a failed call, from the error's kind; never from request bodies or tokens. */
export function describe(err: unknown, what: string): OAuthCallFailed {
  if (err instanceof OAuthCallFailed) return err;
  if (err instanceof FetchRefused || err instanceof FetchFailed) {
    return new OAuthCallFailed(`The ${what} could not be reached: ${err.message}`, null, true);
  }
  if (err instanceof oauth.ResponseBodyError || err instanceof oauth.AuthorizationResponseError) {
    const desc = err.error_description ? ` (${err.error_description.slice(0, 300)})` : "";
    return new OAuthCallFailed(
      `The ${what} answered with error "${err.error.slice(0, 100)}"${desc}.`,
      err.error,
      false,
    );
  }
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    const challenge = err.cause[0];
    const code = challenge?.parameters.error ?? null;
    return new OAuthCallFailed(
      `The ${what} refused the request (HTTP ${err.status}${code ? `, ${code.slice(0, 100)}` : ""}).`,
      code,
      false,
    );
  }
  if (err instanceof oauth.OperationProcessingError || err instanceof oauth.UnsupportedOperationError) {
    return new OAuthCallFailed(`The ${what} gave an unusable answer: ${err.message}.`, null, true);
  }
  return new OAuthCallFailed(`The ${what} call failed.`, null, true);
}

/**
 * Checks the authorization response and exchanges its code at the token endpoint. The issuer is
 * the discovered one, else the response's `iss` (RFC 9207), else the authorization URL's origin;
 * per-provider redirect URIs keep responses of different servers apart either way.
 */
export async function exchangeCode(
  p: ProviderClient,
  fetch: SafeFetch,
  params: URLSearchParams,
  input: { state: string; redirectUri: string; codeVerifier: string | null },
): Promise<{ tokens: TokenSet; issuer: string }> {
  const issuer = p.issuer ?? params.get("iss") ?? new URL(p.authUrl).origin;
  const as = server(p, issuer);
  const client: oauth.Client = { client_id: p.clientId };
  let validated: URLSearchParams;
  try {
    validated = oauth.validateAuthResponse(as, client, params, input.state);
  } catch (err) {
    throw describe(err, "authorization server");
  }
  try {
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      clientAuth(p),
      validated,
      input.redirectUri,
      p.usesPkce && input.codeVerifier !== null ? input.codeVerifier : oauth.nopkce,
      {
        ...transport(quirkyFetch(fetch, p.quirks ?? null), p.tokenUrl),
        additionalParameters: resourceParams(p),
      },
    );
    const result = await oauth.processAuthorizationCodeResponse(as, client, response);
    return { tokens: toTokenSet(result), issuer };
  } catch (err) {
    throw describe(err, "token endpoint");
  }
}

/** Uses a refresh token; the answer may or may not carry a new refresh token. */
export async function refreshTokens(
  p: ProviderClient,
  fetch: SafeFetch,
  issuer: string,
  refreshToken: string,
): Promise<TokenSet> {
  // A template may name a refresh endpoint of its own (providerClient keeps it only while the
  // provider uses the template's token URL).
  const refreshUrl = p.quirks?.refresh_url ?? p.tokenUrl;
  const as = { ...server(p, issuer), token_endpoint: refreshUrl };
  const client: oauth.Client = { client_id: p.clientId };
  try {
    const response = await oauth.refreshTokenGrantRequest(as, client, clientAuth(p), refreshToken, {
      ...transport(quirkyFetch(fetch, p.quirks ?? null), refreshUrl),
      additionalParameters: resourceParams(p),
    });
    return toTokenSet(await oauth.processRefreshTokenResponse(as, client, response));
  } catch (err) {
    throw describe(err, "token endpoint");
  }
}
