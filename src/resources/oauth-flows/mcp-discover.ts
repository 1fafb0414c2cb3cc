import { badGateway, conflict, invalid } from "../../core/errors.ts";
import type { Executor } from "../../db/client.ts";
import { DiscoveryFailed, discoverAndRegister } from "../../oauth/mcp-discovery.ts";
import { FetchFailed, FetchRefused } from "../../oauth/safe-fetch.ts";
import { urlProblem } from "../../oauth/url-policy.ts";
import { resolvedUrlProblems } from "../oauth-providers/rules.ts";
import type { McpDiscoverBody, OAuthProvider } from "../oauth-providers/schema.ts";
import { insertProvider, providerExists } from "../oauth-providers/service.ts";
import type { FlowEnv } from "../oauth-tokens/env.ts";
import { callbackUrl } from "./env.ts";

/**
 * Creates a provider for an MCP server: discovers its authorization server (RFC 9728, RFC 8414)
 * and registers a client there (RFC 7591). Refused or unusable URLs are the caller's to fix (422);
 * a server that cannot be reached is a 502.
 */
export async function mcpDiscover(
  exec: Executor,
  env: FlowEnv,
  organizationId: string,
  body: McpDiscoverBody,
): Promise<OAuthProvider> {
  const allowLoopback = env.config.oauth.allowInsecureLoopback;
  const problem = urlProblem(body.mcp_server_url, allowLoopback);
  if (problem !== null) throw invalid(["body", "mcp_server_url"], `URL ${problem}.`, "url_error");
  // Checked first so that no client is registered for a request that cannot be stored.
  if (await providerExists(exec, organizationId, body.provider_id)) {
    throw conflict(
      `An OAuth provider with provider_id "${body.provider_id}" already exists in this organization.`,
    );
  }
  let registered: Awaited<ReturnType<typeof discoverAndRegister>>;
  try {
    registered = await discoverAndRegister(env.fetch, {
      mcpServerUrl: body.mcp_server_url,
      clientName: body.name,
      redirectUri: callbackUrl(env.config, body.provider_id),
      allowLoopback,
    });
  } catch (err) {
    if (err instanceof FetchRefused) throw invalid(["body", "mcp_server_url"], err.message, "url_refused");
    if (err instanceof DiscoveryFailed)
      throw invalid(["body", "mcp_server_url"], err.message, "discovery_failed");
    if (err instanceof FetchFailed) throw badGateway(err.message);
    throw err;
  }
  // The discovered endpoints pass the rules a provider created by hand does, when they are stored.
  const refused = await resolvedUrlProblems(
    { auth_url: registered.authUrl, token_url: registered.tokenUrl },
    env.config,
  );
  if (refused.length > 0) {
    const why = refused.map((r) => `the discovered ${r.loc[1]} ${r.msg.replace(/^URL /, "")}`).join("; ");
    throw invalid(["body", "mcp_server_url"], why, "url_refused");
  }
  return insertProvider(exec, env.keyring, organizationId, {
    providerId: body.provider_id,
    name: body.name,
    clientId: registered.clientId,
    clientSecret: registered.clientSecret,
    authUrl: registered.authUrl,
    tokenUrl: registered.tokenUrl,
    usesPkce: true,
    codeChallengeMethod: "S256",
    tokenEndpointAuthMethod: registered.tokenEndpointAuthMethod,
    providerType: "mcp",
    mcpServerUrl: body.mcp_server_url,
    isDynamicClient: true,
    issuer: registered.issuer,
  });
}
