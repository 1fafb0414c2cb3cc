import type { Config } from "../../config.ts";
import type { FieldProblem } from "../../core/errors.ts";
import type { CodeChallengeMethod, TokenEndpointAuthMethod } from "../../db/schema/oauth.ts";
import { storedUrlProblem, urlProblem } from "../../oauth/url-policy.ts";

/** A provider's settings as they will be stored, with which fields the request gave explicitly. */
export interface ProviderSettings {
  authUrl: string;
  tokenUrl: string;
  mcpServerUrl: string | null;
  /** The proxy's base URL, checked like the others. */
  apiBaseUrl?: string | null;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  hasClientSecret: boolean;
  /** A secret was sent in this request. */
  secretGiven: boolean;
  usesPkce: boolean;
  codeChallengeMethod: CodeChallengeMethod | null;
}

/**
 * The rules that hold for every stored provider, checked on the record that would result from a
 * create or a patch. Every problem is reported, each under the field to fix.
 */
export function settingsProblems(s: ProviderSettings, config: Config): FieldProblem[] {
  const items: FieldProblem[] = [];
  const add = (field: string, msg: string, type = "value_error") =>
    items.push({ loc: ["body", field], msg, type });
  const allowLoopback = config.oauth.allowInsecureLoopback;
  for (const [field, value] of [
    ["auth_url", s.authUrl],
    ["token_url", s.tokenUrl],
    ["mcp_server_url", s.mcpServerUrl],
    ["api_base_url", s.apiBaseUrl ?? null],
  ] as const) {
    if (value === null) continue;
    const problem = urlProblem(value, allowLoopback);
    if (problem !== null) add(field, `URL ${problem}.`, "url_error");
  }
  if (s.tokenEndpointAuthMethod === "none") {
    if (s.secretGiven)
      add("client_secret", "A public client (token_endpoint_auth_method none) has no secret.");
    if (!s.usesPkce) add("uses_pkce", "A public client (token_endpoint_auth_method none) must use PKCE.");
  } else if (!s.hasClientSecret) {
    add("client_secret", `Field required unless token_endpoint_auth_method is none.`, "missing");
  }
  if (!s.usesPkce && s.codeChallengeMethod !== null) {
    add("code_challenge_method", "Only applies when uses_pkce is true.");
  }
  if (s.codeChallengeMethod === "plain" && !config.oauth.allowPlainPkce) {
    add(
      "code_challenge_method",
      "plain is not allowed on this server (RFC 7636 and the MCP authorization spec require S256).",
    );
  }
  return items;
}

/**
 * The store-time check of host names: each URL given whose literal form passes urlProblem (that
 * one is reported by settingsProblems) is refused when its name resolves to an address the fetch
 * would refuse. Run outside transactions: it waits for DNS.
 */
export async function resolvedUrlProblems(
  urls: Record<string, string | null | undefined>,
  config: Config,
): Promise<FieldProblem[]> {
  const allowLoopback = config.oauth.allowInsecureLoopback;
  const checks = Object.entries(urls).map(async ([field, value]): Promise<FieldProblem[]> => {
    if (value === null || value === undefined || urlProblem(value, allowLoopback) !== null) return [];
    const problem = await storedUrlProblem(value, allowLoopback);
    return problem === null ? [] : [{ loc: ["body", field], msg: `URL ${problem}.`, type: "url_error" }];
  });
  return (await Promise.all(checks)).flat();
}
