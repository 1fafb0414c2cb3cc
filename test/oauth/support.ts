import type { TestContext } from "../helpers/harness.ts";

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
