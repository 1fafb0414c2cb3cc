import type { Config } from "../../config.ts";
import type { Keyring } from "../../crypto/envelope.ts";
import type { ProviderClient } from "../../oauth/client.ts";
import { createSafeFetch, type SafeFetch } from "../../oauth/safe-fetch.ts";
import type { ProviderRow } from "../oauth-providers/service.ts";
import { clientSecretOf } from "../oauth-providers/service.ts";

/** What the flow services use besides the database: config, the keyring and the SSRF-safe fetch. */
export interface FlowEnv {
  config: Config;
  keyring: Keyring;
  fetch: SafeFetch;
}

/** Flows must be completed within this time. */
export const FLOW_TTL_MS = 10 * 60 * 1000;

export function callbackUrl(config: Config, slug: string): string {
  return `${config.publicUrl}${config.basePath}/v2/auth/callback/${encodeURIComponent(slug)}`;
}

export function providerClient(row: ProviderRow, keyring: Keyring): ProviderClient {
  return {
    clientId: row.clientId,
    clientSecret: clientSecretOf(row, keyring),
    authUrl: row.authUrl,
    tokenUrl: row.tokenUrl,
    tokenEndpointAuthMethod: row.tokenEndpointAuthMethod,
    usesPkce: row.usesPkce,
    codeChallengeMethod: row.codeChallengeMethod,
    issuer: row.issuer,
    mcpServerUrl: row.mcpServerUrl,
  };
}

/** The environment of the flow and token services of one app. */
export function flowEnvOf(deps: { config: Config; keyring: Keyring }): FlowEnv {
  return {
    config: deps.config,
    keyring: deps.keyring,
    fetch: createSafeFetch({ allowLoopback: deps.config.oauth.allowInsecureLoopback }),
  };
}
