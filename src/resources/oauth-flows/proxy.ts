import type { Readable } from "node:stream";
import { badGateway, conflict, invalid, notFound } from "../../core/errors.ts";
import type { Executor } from "../../db/client.ts";
import { expandTemplate, findTemplate, type TemplateQuirks } from "../../oauth/catalog.ts";
import {
  FetchFailed,
  FetchRefused,
  type ProxyResponse,
  proxyRequest,
  RedirectRefused,
} from "../../oauth/proxy-request.ts";
import { connectionFor } from "../agent-connections/service.ts";
import { findProviderRow, providerClient } from "../oauth-providers/service.ts";
import type { ProviderRow } from "../oauth-providers/store.ts";
import type { FlowEnv } from "../oauth-tokens/env.ts";
import { issued, usableToken } from "../oauth-tokens/seal.ts";
import { pickToken, type TokenRow } from "../oauth-tokens/store.ts";
import { type TokenCaller, tenantUserId } from "../oauth-tokens/tenant.ts";

/**
 * API calls made with a user's stored token (the proxy): the call goes to the provider's API base
 * URL with the token, renewed first when it expires within a minute, and once more after a 401;
 * the answer comes back as the provider gave it, streamed. The token is never in the answer.
 */

/** Renewed before the call when it expires within this. */
const REFRESH_MARGIN_MS = 60_000;

/** Request headers never forwarded: Slipway's own credentials and routing, and hop-by-hop ones. */
const DROPPED_REQUEST = new Set([
  "x-api-key",
  "authorization",
  "x-tenant-id",
  "cookie",
  "host",
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "content-length",
  "expect",
  "forwarded",
  "x-forwarded-for",
  "x-forwarded-host",
  "x-forwarded-proto",
  "x-real-ip",
]);
/** Response headers not passed back: hop-by-hop ones, and the provider's cookies. */
const DROPPED_RESPONSE = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "set-cookie",
]);

export interface ProxyCall {
  providerSlug: string;
  userId?: string;
  agentId?: string;
  method: string;
  /** The path under the API base URL, as given (checked here). */
  path: string;
  /** The query string without its "?", already encoded. */
  query: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
  /** Where the path came from, for 422s: ["body", "path"] or ["path", "*"]. */
  pathLoc: string[];
}

export interface ProxyAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Readable;
}

/** The provider's API base URL: its own api_base_url, else its template's (placeholders filled). */
export function apiBaseOf(provider: ProviderRow): string | null {
  if (provider.apiBaseUrl !== null) return provider.apiBaseUrl;
  const t = provider.template === null ? undefined : findTemplate(provider.template);
  if (!t) return null;
  const expanded = expandTemplate(t, provider.templateParams);
  return "urls" in expanded ? expanded.urls.apiBaseUrl : null;
}

/**
 * The URL a call goes to: the base URL with the path appended. A path that is an absolute URL
 * (or scheme-relative), or that has a `..` segment (plain or percent-encoded), a backslash or a
 * control character is refused: the call must stay under the base URL.
 */
export function targetUrl(base: string, path: string, query: string, loc: string[]): URL {
  const bad = (msg: string) => invalid(loc, msg);
  if (/^[a-z][a-z0-9+.-]*:/i.test(path) || path.startsWith("//"))
    throw bad("Must be a path, not an absolute URL.");
  const unsafe = [...path].some(
    (c) => c.charCodeAt(0) <= 0x20 || c.charCodeAt(0) === 0x7f || "\\#?".includes(c),
  );
  if (unsafe) {
    throw bad("Must not contain spaces, control characters, backslashes, ? or #.");
  }
  for (const segment of path.split("/")) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw bad("Has a malformed percent-encoding.");
    }
    // %2e%2e and ..%2f are .. to a server that decodes before it resolves.
    if (decoded.split(/[/\\]/).some((part) => part === "." || part === "..")) {
      throw bad("Must not contain . or .. segments.");
    }
  }
  const root = new URL(base);
  const prefix = root.pathname.replace(/\/+$/, "");
  const url = new URL(root.origin);
  url.pathname = `${prefix}/${path.replace(/^\/+/, "")}`;
  url.search = query === "" ? "" : `?${query}`;
  // Belt and braces: whatever the URL parser made of it, it stays under the base.
  if (url.origin !== root.origin || !`${url.pathname}/`.startsWith(`${prefix}/`)) {
    throw bad("Must stay under the provider's API base URL.");
  }
  return url;
}

/** The token a call uses: the agent's connection, else the tenant's for (user, agent), as authenticate picks it. */
async function tokenFor(
  exec: Executor,
  caller: TokenCaller,
  provider: ProviderRow,
  call: ProxyCall,
): Promise<TokenRow | undefined> {
  const { tenant } = caller;
  if (call.agentId !== undefined && caller.actingWorkspaceId !== null) {
    const scope = {
      organizationId: tenant.organizationId,
      workspaceId: caller.actingWorkspaceId,
      agentId: call.agentId,
    };
    const found = await connectionFor(exec, scope, provider.id);
    if (found) return found.token;
  }
  return pickToken(exec, {
    organizationId: tenant.organizationId,
    tenantWorkspaceId: tenant.workspaceId,
    providerRef: provider.id,
    userId: call.userId ?? tenantUserId(tenant),
    agentId: call.agentId ?? "",
  });
}

function outgoingHeaders(
  call: ProxyCall,
  quirks: TemplateQuirks | null,
  token: string,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(quirks?.api_headers ?? {})) headers[name.toLowerCase()] = value;
  for (const [name, value] of Object.entries(call.headers)) {
    const lower = name.toLowerCase();
    if (!DROPPED_REQUEST.has(lower) && !lower.startsWith("proxy-")) headers[lower] = value;
  }
  if (quirks?.token_header !== undefined) headers[quirks.token_header.toLowerCase()] = token;
  else headers.authorization = `Bearer ${token}`;
  return headers;
}

function answerOf(res: ProxyResponse): ProxyAnswer {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined || DROPPED_RESPONSE.has(name) || name.startsWith("proxy-")) continue;
    headers[name] = value;
  }
  return { status: res.status, headers, body: res.body };
}

/** Makes the call; the provider's own status (429 with its Retry-After included) comes back as it is. */
export async function proxyCall(
  exec: Executor,
  env: FlowEnv,
  caller: TokenCaller,
  call: ProxyCall,
): Promise<ProxyAnswer> {
  const provider = await findProviderRow(exec, caller.tenant.organizationId, call.providerSlug);
  if (!provider) throw notFound(`OAuth provider "${call.providerSlug}" not found.`);
  const base = apiBaseOf(provider);
  if (base === null) {
    throw conflict(`OAuth provider "${call.providerSlug}" has no api_base_url; set one with PATCH.`);
  }
  const url = targetUrl(base, call.path, call.query, call.pathLoc);
  const stored = await tokenFor(exec, caller, provider, call);
  const none = `No usable token for provider "${call.providerSlug}" and this user; get one with POST /v2/auth/authenticate.`;
  if (!stored) throw conflict(none);
  let row = await usableToken(exec, env, stored, provider, { marginMs: REFRESH_MARGIN_MS });
  if (!row) throw conflict(none);
  const quirks = providerClient(provider, env.keyring).quirks ?? null;
  const send = async (r: TokenRow) => {
    try {
      return await proxyRequest({
        url,
        method: call.method,
        headers: outgoingHeaders(call, quirks, issued(r, env.keyring).token),
        body: call.body,
        allowLoopback: env.config.oauth.allowInsecureLoopback,
      });
    } catch (err) {
      if (err instanceof FetchRefused) throw badGateway(`The call was refused: ${err.reason}.`);
      if (err instanceof FetchFailed || err instanceof RedirectRefused) throw badGateway(err.message);
      throw err;
    }
  };
  let res = await send(row);
  if (res.status === 401 && row.refreshTokenEnc !== null) {
    // The provider no longer takes this token: renew once (unless a concurrent call already did) and retry once.
    res.body.resume();
    const renewed = await usableToken(exec, env, row, provider, { rejectedIssuedAt: row.issuedAt });
    if (!renewed) throw conflict(none);
    row = renewed;
    res = await send(row);
  }
  return answerOf(res);
}
