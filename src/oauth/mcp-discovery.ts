import * as oauth from "oauth4webapi";
import { slipwayVersion } from "../config/version.ts";
import type { TokenEndpointAuthMethod } from "../db/schema/oauth.ts";
import { FetchRefused, type SafeFetch } from "./safe-fetch.ts";
import { urlProblem } from "./url-policy.ts";

/** Discovery could not finish: the MCP server or its authorization server did not give what is needed. */
export class DiscoveryFailed extends Error {}

export interface RegisteredClient {
  issuer: string;
  authUrl: string;
  tokenUrl: string;
  clientId: string;
  clientSecret: string | null;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The `resource_metadata` parameter of a Bearer challenge (RFC 9728 §5.1), if there is one. */
export function resourceMetadataFromChallenge(header: string | null): string | null {
  if (header === null) return null;
  const m = /(?:^|[\s,])resource_metadata\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/i.exec(header);
  if (!m) return null;
  return (m[1] ?? m[2] ?? "").replace(/\\(.)/g, "$1") || null;
}

/** RFC 9728 §3.1: the well-known suffix goes between the host and the resource's path. */
export function wellKnownResourceUrls(resource: URL): string[] {
  const path = resource.pathname.replace(/\/+$/, "");
  const root = `${resource.origin}/.well-known/oauth-protected-resource`;
  return path === "" ? [root] : [`${root}${path}`, root];
}

async function readJson(res: Response, what: string): Promise<Json> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    throw new DiscoveryFailed(`The ${what} is not JSON.`);
  }
  if (!isObject(body)) throw new DiscoveryFailed(`The ${what} is not a JSON object.`);
  return body;
}

const sameResource = (a: string, b: string) => {
  try {
    return new URL(a).href.replace(/\/$/, "") === new URL(b).href.replace(/\/$/, "");
  } catch {
    return false;
  }
};

/**
 * An unauthenticated MCP request: a server that needs OAuth answers 401 and may name its
 * metadata document in WWW-Authenticate. Only the status and headers are read.
 */
async function probe(fetch: SafeFetch, mcpServerUrl: string): Promise<string | null> {
  const res = await fetch(mcpServerUrl, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "slipway", version: slipwayVersion() },
      },
    }),
    discardBody: true,
  });
  return res.status === 401 ? resourceMetadataFromChallenge(res.headers.get("www-authenticate")) : null;
}

/** The protected resource metadata (RFC 9728) of an MCP server: where it says, else the well-known URLs. */
async function protectedResource(fetch: SafeFetch, mcpServerUrl: string): Promise<Json> {
  const named = await probe(fetch, mcpServerUrl);
  const candidates = named !== null ? [named] : wellKnownResourceUrls(new URL(mcpServerUrl));
  for (const url of candidates) {
    const res = await fetch(url, { headers: { accept: "application/json" } });
    if (res.status === 404 && named === null) continue;
    if (res.status !== 200) {
      throw new DiscoveryFailed(`The MCP server's protected resource metadata answered HTTP ${res.status}.`);
    }
    const meta = await readJson(res, "protected resource metadata");
    if (typeof meta.resource !== "string" || !sameResource(meta.resource, mcpServerUrl)) {
      throw new DiscoveryFailed(
        "The protected resource metadata names another resource than mcp_server_url.",
      );
    }
    return meta;
  }
  throw new DiscoveryFailed("The MCP server publishes no protected resource metadata (RFC 9728).");
}

/** RFC 8414 metadata of the authorization server, falling back to OpenID Connect discovery. */
export async function authorizationServer(
  fetch: SafeFetch,
  issuer: string,
): Promise<oauth.AuthorizationServer> {
  const issuerUrl = new URL(issuer);
  const options = {
    [oauth.customFetch]: fetch,
    [oauth.allowInsecureRequests]: issuerUrl.protocol === "http:",
  };
  let lastStatus = 0;
  for (const algorithm of ["oauth2", "oidc"] as const) {
    const res = await oauth.discoveryRequest(issuerUrl, { ...options, algorithm });
    if (res.status !== 200) {
      lastStatus = res.status;
      continue;
    }
    try {
      return await oauth.processDiscoveryResponse(issuerUrl, res);
    } catch (err) {
      const why = err instanceof Error ? err.message : "unusable";
      throw new DiscoveryFailed(`The authorization server's metadata is not usable: ${why}.`);
    }
  }
  throw new DiscoveryFailed(`The authorization server publishes no metadata (HTTP ${lastStatus}).`);
}

const PREFERRED: TokenEndpointAuthMethod[] = ["client_secret_basic", "client_secret_post", "none"];

function endpoint(meta: oauth.AuthorizationServer, key: string, allowLoopback: boolean): string {
  const value = (meta as Json)[key];
  if (typeof value !== "string")
    throw new DiscoveryFailed(`The authorization server's metadata has no ${key}.`);
  const problem = urlProblem(value, allowLoopback);
  if (problem !== null) throw new FetchRefused(value, `its ${key} ${problem}`);
  return value;
}

/**
 * Finds an MCP server's authorization server and registers a client there (RFC 7591), so that
 * the provider can run authorization-code flows with PKCE. Every URL goes through `fetch`, the
 * SSRF-checked one.
 */
export async function discoverAndRegister(
  fetch: SafeFetch,
  input: { mcpServerUrl: string; clientName: string; redirectUri: string; allowLoopback: boolean },
): Promise<RegisteredClient> {
  const resource = await protectedResource(fetch, input.mcpServerUrl);
  const servers = resource.authorization_servers;
  if (!Array.isArray(servers) || typeof servers[0] !== "string") {
    throw new DiscoveryFailed("The protected resource metadata names no authorization server.");
  }
  const issuer = servers[0];
  const problem = urlProblem(issuer, input.allowLoopback);
  if (problem !== null) throw new FetchRefused(issuer, `the authorization server URL ${problem}`);
  const meta = await authorizationServer(fetch, issuer);
  const authUrl = endpoint(meta, "authorization_endpoint", input.allowLoopback);
  const tokenUrl = endpoint(meta, "token_endpoint", input.allowLoopback);
  if (meta.registration_endpoint === undefined) {
    throw new DiscoveryFailed("The authorization server does not offer dynamic client registration.");
  }
  const registrationUrl = endpoint(meta, "registration_endpoint", input.allowLoopback);
  // No advertised methods means no PKCE support, and MCP clients must not proceed without it.
  if (!meta.code_challenge_methods_supported?.includes("S256")) {
    throw new DiscoveryFailed("The authorization server does not support PKCE with S256.");
  }
  const offered = meta.token_endpoint_auth_methods_supported ?? ["client_secret_basic"];
  const method = PREFERRED.find((m) => offered.includes(m));
  if (method === undefined) {
    throw new DiscoveryFailed(
      "The authorization server supports none of client_secret_basic, client_secret_post, none.",
    );
  }
  const res = await fetch(registrationUrl, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({
      client_name: input.clientName,
      redirect_uris: [input.redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: method,
    }),
  });
  if (res.status !== 201 && res.status !== 200) {
    let why = `HTTP ${res.status}`;
    try {
      const body = (await res.json()) as unknown;
      if (isObject(body) && typeof body.error === "string") {
        const desc =
          typeof body.error_description === "string" ? `: ${body.error_description.slice(0, 300)}` : "";
        why = `${body.error.slice(0, 100)}${desc}`;
      }
    } catch {
      // The status alone says enough.
    }
    throw new DiscoveryFailed(`Dynamic client registration was refused (${why}).`);
  }
  const client = await readJson(res, "registration response");
  if (typeof client.client_id !== "string" || client.client_id === "") {
    throw new DiscoveryFailed("The registration response has no client_id.");
  }
  const given = client.token_endpoint_auth_method;
  const registeredMethod = PREFERRED.find((m) => m === given) ?? method;
  const secret =
    typeof client.client_secret === "string" && client.client_secret !== "" ? client.client_secret : null;
  if (registeredMethod !== "none" && secret === null) {
    throw new DiscoveryFailed("The registration response has no client_secret for a confidential client.");
  }
  return {
    issuer: meta.issuer,
    authUrl,
    tokenUrl,
    clientId: client.client_id,
    clientSecret: registeredMethod === "none" ? null : secret,
    tokenEndpointAuthMethod: registeredMethod,
  };
}
