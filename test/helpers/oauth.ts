import { insertApiKey } from "../../src/resources/api-keys/service.ts";
import type { TestContext } from "./harness.ts";
import type { ClientSpec, OidcServer } from "./oidc-server.ts";

/** Shared bits of the OAuth suites. */
export const PUBLIC_URL = "https://slipway.example.test";
export const callbackFor = (slug: string) => `${PUBLIC_URL}/v2/auth/callback/${slug}`;
/** Loopback http for the in-process provider, and a public URL the provider redirects to. */
export const LOOPBACK_ENV = { SLIPWAY_OAUTH_ALLOW_INSECURE_LOOPBACK: "true", SLIPWAY_PUBLIC_URL: PUBLIC_URL };

export interface Reply {
  statusCode: number;
  body: string;
  headers: Record<string, unknown>;
  json(): unknown;
}

export async function send(
  ctx: TestContext,
  method: "GET" | "POST" | "PATCH" | "DELETE",
  url: string,
  payload?: unknown,
  key: string = ctx.keys.member,
): Promise<Reply> {
  const headers: Record<string, string> = { "x-api-key": key };
  if (payload !== undefined) headers["content-type"] = "application/json";
  return ctx.app.inject({
    method,
    url,
    headers,
    payload: payload === undefined ? undefined : JSON.stringify(payload),
  });
}

/** The browser arriving back at Slipway: the redirect's path and query, through the app. */
export async function callback(ctx: TestContext, redirect: URL): Promise<Reply> {
  return ctx.app.inject({ method: "GET", url: `${redirect.pathname}${redirect.search}` });
}

export interface ProviderBody {
  provider_id: string;
  name: string;
  client_id: string;
  auth_url: string;
  token_url: string;
  client_secret?: string | null;
  uses_pkce?: boolean | null;
  code_challenge_method?: string | null;
  token_endpoint_auth_method?: string | null;
  provider_type?: string | null;
  mcp_server_url?: string | null;
}

export function detailLocs(reply: Reply): string[] {
  const body = reply.json() as { detail: { loc: (string | number)[] }[] | string };
  if (!Array.isArray(body.detail)) throw new Error(`expected a 422 list, got ${reply.body}`);
  return body.detail.map((d) => d.loc.join("."));
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A fresh API key of the first organization (bound to `workspaceId` when given). Tokens are its
 * tenant's, not the key's: a test keeps its tokens apart with end users of its own.
 */
export async function newKey(
  ctx: TestContext,
  role: "admin" | "member" | "viewer" = "member",
  workspaceId: string | null = null,
): Promise<{ key: string; id: string }> {
  const created = await insertApiKey(ctx.db.orm, { organizationId: ctx.orgId, role, workspaceId });
  return { key: created.key, id: created.id };
}

export interface AuthAnswer {
  status: string;
  url?: string | null;
  auth_id?: string | null;
  user_id?: string | null;
  token?: string | null;
  token_id?: string;
  scopes?: string[];
  metadata?: Record<string, unknown> | null;
  reason?: string;
}

export interface TokenSummary {
  id: string;
  provider_id: string;
  provider_account_label: string | null;
  scopes: string[];
  expires_at: string | null;
  is_default: boolean;
  created_at: string;
  updated_at: string;
  user_id: string;
  agent_id: string | null;
}

export async function authenticateAs(ctx: TestContext, body: unknown, key: string): Promise<AuthAnswer> {
  const res = await send(ctx, "POST", "/v2/auth/authenticate", body, key);
  if (res.statusCode !== 200) throw new Error(`authenticate → ${res.statusCode}: ${res.body}`);
  return res.json() as AuthAnswer;
}

/** authenticate → the provider's consent → the browser's callback → wait: the completed answer. */
export async function obtainToken(
  ctx: TestContext,
  oidc: OidcServer,
  body: Record<string, unknown>,
  key: string,
): Promise<AuthAnswer> {
  const pending = await authenticateAs(ctx, body, key);
  if (pending.status !== "pending") throw new Error(`expected a flow, got ${JSON.stringify(pending)}`);
  const page = await callback(ctx, await oidc.authorize(pending.url ?? ""));
  if (page.statusCode !== 200) throw new Error(`callback → ${page.statusCode}: ${page.body}`);
  const done = await send(ctx, "GET", `/v2/auth/wait/${pending.auth_id}?timeout=5`, undefined, key);
  const answer = done.json() as AuthAnswer;
  if (answer.status !== "completed") throw new Error(`wait → ${done.body}`);
  return { ...answer, user_id: pending.user_id };
}

/** Creates a provider for one of the in-process server's clients. */
export async function createProviderFor(
  ctx: TestContext,
  oidc: OidcServer,
  client: { slug: string; secret: string },
  extra: Partial<ProviderBody> = {},
  key: string = ctx.keys.admin,
): Promise<void> {
  const res = await send(
    ctx,
    "POST",
    "/v2/auth/providers",
    {
      provider_id: client.slug,
      name: `Provider ${client.slug}`,
      client_id: `client-${client.slug}`,
      client_secret: client.secret,
      auth_url: oidc.authUrl,
      token_url: oidc.tokenUrl,
      ...extra,
    },
    key,
  );
  if (res.statusCode !== 200) throw new Error(`create provider → ${res.statusCode}: ${res.body}`);
}

/** The in-process server's client for a slug (secret post, PKCE), redirecting to Slipway. */
export const clientSpec = (client: { slug: string; secret: string }): ClientSpec => ({
  client_id: `client-${client.slug}`,
  client_secret: client.secret,
  token_endpoint_auth_method: "client_secret_post",
  redirect_uris: [callbackFor(client.slug)],
});
