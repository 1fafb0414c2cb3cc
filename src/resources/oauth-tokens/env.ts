import type { Config } from "../../config.ts";
import type { Keyring } from "../../crypto/envelope.ts";
import { createSafeFetch, type SafeFetch } from "../../oauth/safe-fetch.ts";

/**
 * What the token and flow services use besides the database: config, the keyring and the
 * SSRF-safe fetch (here, with the tokens, because flows build on tokens and not the other way).
 */
export interface FlowEnv {
  config: Config;
  keyring: Keyring;
  fetch: SafeFetch;
}

/** The environment of the flow and token services of one app. */
export function flowEnvOf(deps: { config: Config; keyring: Keyring }): FlowEnv {
  return {
    config: deps.config,
    keyring: deps.keyring,
    fetch: createSafeFetch({ allowLoopback: deps.config.oauth.allowInsecureLoopback }),
  };
}
