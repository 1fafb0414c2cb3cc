import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Provider, { type Interaction } from "oidc-provider";

/**
 * A real OpenID provider (oidc-provider) on 127.0.0.1, for OAuth flow tests. Beside the provider
 * it serves MCP-like protected resources under /mcp* (a 401 challenge and RFC 9728 metadata), and
 * a browser helper that logs in and consents the way a person would.
 */
export interface ClientSpec {
  client_id: string;
  client_secret?: string;
  token_endpoint_auth_method: "client_secret_post" | "client_secret_basic" | "none";
  redirect_uris: string[];
}

export interface OidcServerOptions {
  clients: ClientSpec[];
  /** Access token lifetime in seconds. */
  accessTokenTtl?: number;
}

export interface OidcServer {
  issuer: string;
  authUrl: string;
  tokenUrl: string;
  userinfoUrl: string;
  /** Successful token endpoint calls per client and grant type, e.g. counts.get("c1 refresh_token"). */
  grants: Map<string, number>;
  grantCount(clientId: string, grantType: string): number;
  /** Plays the browser: follows the authorization URL, logs in, consents; returns the redirect back. */
  authorize(url: string, opts?: { deny?: boolean }): Promise<URL>;
  /** Whether the provider accepts this access token (its userinfo endpoint). */
  userinfo(accessToken: string): Promise<number>;
  close(): Promise<void>;
}

export const ACCOUNT_ID = "alice";
const MCP_SCOPE = "mcp:tools";

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** /mcp* resources: each variant exercises one discovery path (see the MCP discover tests). */
function serveMcp(req: IncomingMessage, res: ServerResponse, origin: string, issuer: string): boolean {
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  const wellKnown = "/.well-known/oauth-protected-resource";
  if (path.startsWith(`${wellKnown}/mcp`)) {
    const resourcePath = path.slice(wellKnown.length);
    const resource = `${origin}${resourcePath}`;
    switch (resourcePath) {
      case "/mcp":
      case "/mcp-plain":
        json(res, 200, { resource, authorization_servers: [issuer], scopes_supported: [MCP_SCOPE] });
        return true;
      case "/mcp-redirect":
        res.writeHead(302, { location: "http://10.255.255.1/.well-known/oauth-protected-resource" });
        res.end();
        return true;
      case "/mcp-private-as":
        json(res, 200, { resource, authorization_servers: ["https://10.0.0.7"] });
        return true;
      case "/mcp-other-resource":
        json(res, 200, { resource: `${origin}/somewhere-else`, authorization_servers: [issuer] });
        return true;
      default:
        json(res, 404, { error: "not_found" });
        return true;
    }
  }
  if (path.startsWith("/mcp")) {
    const challenge =
      path === "/mcp"
        ? `Bearer resource_metadata="${origin}${wellKnown}/mcp", scope="${MCP_SCOPE}"`
        : "Bearer";
    res.writeHead(401, { "www-authenticate": challenge, "content-type": "application/json" });
    res.end(JSON.stringify({ error: "unauthorized" }));
    return true;
  }
  return false;
}

/** Login first, then consent to exactly what the client asked for. */
async function interact(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  deny: boolean,
): Promise<void> {
  const details: Interaction = await provider.interactionDetails(req, res);
  if (deny) {
    await provider.interactionFinished(
      req,
      res,
      { error: "access_denied", error_description: "The user <b>declined</b>." },
      { mergeWithLastSubmission: false },
    );
    return;
  }
  if (details.prompt.name === "login") {
    await provider.interactionFinished(req, res, { login: { accountId: ACCOUNT_ID } });
    return;
  }
  const accountId = details.session?.accountId ?? ACCOUNT_ID;
  const clientId = details.params.client_id ?? "";
  const grant =
    (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ??
    new provider.Grant({ accountId, clientId });
  const d = details.prompt.details;
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(" "));
  if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(" "));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

export async function startOidcServer(opts: OidcServerOptions): Promise<OidcServer> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server: Server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  const issuer = origin;
  const ttl = opts.accessTokenTtl ?? 3600;
  const jwk = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" });

  const provider = new Provider(issuer, {
    clients: opts.clients.map((c) => ({
      ...c,
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    })),
    jwks: { keys: [{ ...jwk, use: "sig", alg: "RS256", kid: "test" }] },
    cookies: { keys: [randomBytes(16).toString("hex")] },
    findAccount: async (_ctx: unknown, id: string) => ({
      accountId: id,
      claims: async () => ({ sub: id, name: "Alice Example", email: "alice@example.test" }),
    }),
    claims: { openid: ["sub"], profile: ["name"], email: ["email"] },
    scopes: ["openid", "offline_access", "profile", "email"],
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      // RFC 7009: deleting a token in Slipway revokes it here.
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => undefined,
        useGrantedResource: async () => true,
        getResourceServerInfo: async () => ({
          scope: MCP_SCOPE,
          audience: `${origin}/mcp`,
          accessTokenFormat: "opaque",
        }),
      },
    },
    // A refresh token for every client allowed the grant, without the offline_access dance.
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(t: string): boolean }) =>
      client.grantTypeAllowed("refresh_token"),
    ttl: {
      AccessToken: ttl,
      AuthorizationCode: 60,
      IdToken: 3600,
      RefreshToken: 86400,
      Interaction: 600,
      Session: 3600,
      Grant: 86400,
    },
  });
  const grants = new Map<string, number>();
  provider.on("grant.success", (ctx) => {
    const key = `${ctx.oidc.client?.clientId ?? "?"} ${String(ctx.oidc.params?.grant_type)}`;
    grants.set(key, (grants.get(key) ?? 0) + 1);
  });
  const oidc = provider.callback();
  handler = (req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const m = /^\/interaction\/([^/]+)(\/deny)?$/.exec(path);
    if (m) {
      interact(provider, req, res, m[2] !== undefined).catch((err: unknown) => {
        json(res, 500, { error: "interaction_failed", error_description: String(err) });
      });
      return;
    }
    if (serveMcp(req, res, origin, issuer)) return;
    oidc(req, res);
  };

  const authorize = async (start: string, o: { deny?: boolean } = {}): Promise<URL> => {
    const jar = new Map<string, string>();
    let url = new URL(start);
    for (let i = 0; i < 12; i++) {
      const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
      const res = await fetch(url, { redirect: "manual", headers: cookie ? { cookie } : {} });
      for (const line of res.headers.getSetCookie()) {
        const [pair = ""] = line.split(";");
        const eq = pair.indexOf("=");
        const name = pair.slice(0, eq).trim();
        const value = pair.slice(eq + 1).trim();
        const expired = /expires=Thu, 01 Jan 1970/i.test(line) || value === "";
        if (expired) jar.delete(name);
        else jar.set(name, value);
      }
      await res.arrayBuffer();
      const location = res.headers.get("location");
      if (res.status < 300 || res.status >= 400 || location === null) {
        throw new Error(`authorization stopped at ${url.pathname} with HTTP ${res.status}`);
      }
      const next = new URL(location, url);
      if (next.origin !== origin) return next;
      if (o.deny && next.pathname.startsWith("/interaction/")) next.pathname += "/deny";
      url = next;
    }
    throw new Error("too many redirects while authorizing");
  };

  return {
    issuer,
    authUrl: `${origin}/auth`,
    tokenUrl: `${origin}/token`,
    userinfoUrl: `${origin}/me`,
    grants,
    grantCount: (clientId, grantType) => grants.get(`${clientId} ${grantType}`) ?? 0,
    authorize,
    userinfo: async (accessToken) => {
      const res = await fetch(`${origin}/me`, { headers: { authorization: `Bearer ${accessToken}` } });
      await res.arrayBuffer();
      return res.status;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A loopback port with nothing listening: a token endpoint that is down. */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
