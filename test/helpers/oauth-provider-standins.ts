import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Loopback authorization servers that behave the way five providers document their OAuth
 * endpoints, quirks included: GitHub (errors with HTTP 200, form-encoded answers unless JSON is
 * asked for, refresh tokens only for expiring tokens), Google (a refresh token only with
 * access_type=offline and prompt=consent, an ID token beside the access token), Slack (user
 * scopes in user_scope, comma separated, the user token nested under authed_user, ok:false
 * errors), Notion (client credentials in HTTP Basic auth only, owner=user) and Microsoft (the
 * tenant in the path, a refresh token only with offline_access). Each also serves a small API
 * under /api that checks the bearer token. (One file past 300 lines: the five providers' ways are
 * easier to compare side by side.)
 */
export type Style = "github" | "google" | "slack" | "notion" | "microsoft";

export interface Standin {
  style: Style;
  origin: string;
  authUrl: string;
  tokenUrl: string;
  apiBase: string;
  clientId: string;
  clientSecret: string;
  /** Token endpoint calls by grant type. */
  grants: Record<string, number>;
  /** Refresh tokens the server no longer accepts (the user revoked the app). */
  revoked: Set<string>;
  /** Plays the user consenting at the authorization URL; returns the redirect back to Slipway. */
  authorize(url: string): URL;
  /** Whether an access token is live. */
  live(token: string): boolean;
  /** The provider stops taking an access token (its API answers 401). */
  kill(token: string): void;
  api: Api;
  close(): Promise<void>;
}

const TENANT = "contoso.onmicrosoft.com";

export interface Api {
  /** Every API call with the bearer token it carried. */
  calls: { path: string; token: string }[];
  /** Lets /api/big send the rest of its body. */
  release: () => void;
  bigSize: number;
}

interface Grant {
  scopes: string[];
  redirectUri: string;
  offline: boolean;
  challenge: string | null;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
  });
}

const token = (prefix: string) => `${prefix}-${randomBytes(12).toString("hex")}`;

export async function startStandin(style: Style): Promise<Standin> {
  const clientId = `client-${style}`;
  const clientSecret = `secret-${style}-${randomBytes(8).toString("hex")}`;
  const codes = new Map<string, Grant>();
  const refreshes = new Map<string, Grant>();
  const access = new Set<string>();
  const grants: Record<string, number> = {};
  const revoked = new Set<string>();
  const prefix = style === "microsoft" ? `/${TENANT}/oauth2/v2.0` : "/oauth";

  const send = (res: ServerResponse, status: number, body: Record<string, unknown>, form = false) => {
    if (form) {
      res.writeHead(status, { "content-type": "application/x-www-form-urlencoded" });
      res.end(new URLSearchParams(body as Record<string, string>).toString());
      return;
    }
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };

  /** How each provider says no. */
  const refuse = (res: ServerResponse, code: string, description: string) => {
    if (style === "slack") return send(res, 200, { ok: false, error: code });
    if (style === "github") return send(res, 200, { error: code, error_description: description });
    return send(res, 400, { error: code, error_description: description });
  };

  const credentials = (
    req: IncomingMessage,
    form: URLSearchParams,
  ): { id: string; secret: string } | null => {
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? "");
    if (style === "notion") {
      // Notion takes the client credentials in Basic auth only.
      if (!basic || form.has("client_secret")) return null;
    }
    if (basic) {
      const [id, secret] = Buffer.from(basic[1] ?? "", "base64")
        .toString("utf8")
        .split(":");
      return { id: decodeURIComponent(id ?? ""), secret: decodeURIComponent(secret ?? "") };
    }
    return { id: form.get("client_id") ?? "", secret: form.get("client_secret") ?? "" };
  };

  /**
   * The scopes a token response names, as each provider names them: Google answers `email` and
   * `profile` with their URLs; Microsoft leaves out openid, profile, email and offline_access.
   */
  const echoedScopes = (scopes: string[]): string[] => {
    if (style === "google") {
      return scopes.map((s) =>
        s === "email" || s === "profile" ? `https://www.googleapis.com/auth/userinfo.${s}` : s,
      );
    }
    if (style === "microsoft") {
      return scopes.filter((s) => !["openid", "profile", "email", "offline_access"].includes(s));
    }
    return scopes;
  };

  const issue = (g: Grant, refreshed: boolean): Record<string, unknown> => {
    const accessToken = token(`${style}-at`);
    access.add(accessToken);
    const sep = style === "slack" ? "," : " ";
    const base: Record<string, unknown> = {
      access_token: accessToken,
      scope: echoedScopes(g.scopes).join(sep),
    };
    let refresh: string | null = null;
    if (g.offline) {
      refresh = token(`${style}-rt`);
      refreshes.set(refresh, g);
    }
    const withRefresh = refresh === null ? {} : { refresh_token: refresh, expires_in: 3600 };
    switch (style) {
      case "github":
        return {
          ...base,
          token_type: "bearer",
          ...withRefresh,
          ...(refresh ? { refresh_token_expires_in: 15897600 } : {}),
        };
      case "google":
        // Google's answer to the code carries an ID token; a refresh answer has none.
        return {
          ...base,
          token_type: "Bearer",
          expires_in: 3599,
          ...(refresh === null ? {} : { refresh_token: refresh }),
          ...(refreshed
            ? {}
            : { id_token: "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2FjY291bnRzLmdvb2dsZS5jb20ifQ.c2ln" }),
        };
      case "slack":
        if (refreshed) return { ok: true, ...base, token_type: "user", ...withRefresh };
        return {
          ok: true,
          app_id: "A0KRD7HC3",
          team: { id: "T9TK3CUKW", name: "Slack Softball Team" },
          authed_user: { id: "U1234", ...base, token_type: "user", ...withRefresh },
          is_enterprise_install: false,
        };
      case "notion":
        return {
          ...base,
          token_type: "bearer",
          bot_id: "b-1",
          workspace_id: "w-1",
          workspace_name: "Acme",
          owner: { type: "user" },
        };
      case "microsoft":
        return {
          ...base,
          token_type: "Bearer",
          expires_in: 3599,
          ext_expires_in: 3599,
          ...withRefresh,
          id_token: "x.y.z",
        };
    }
  };

  const onAuthorizePath = (url: URL): string | null => {
    const q = url.searchParams;
    if (q.get("client_id") !== clientId) return "unknown client";
    if (q.get("response_type") !== "code") return "response_type must be code";
    if (style === "notion" && q.get("owner") !== "user") return "owner=user is required";
    if (style === "slack" && q.has("scope")) return "this app asks for user scopes only";
    return null;
  };

  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (req.method === "POST" && url.pathname === `${prefix}/token`) {
      const form = new URLSearchParams(await readBody(req));
      const creds = credentials(req, form);
      if (!creds || creds.id !== clientId || creds.secret !== clientSecret) {
        if (style === "notion") return send(res, 401, { error: "invalid_client" });
        return refuse(res, "invalid_client", "bad client credentials");
      }
      // GitHub answers form-encoded unless asked for JSON.
      const form_ = style === "github" && !(req.headers.accept ?? "").includes("application/json");
      const type = form.get("grant_type") ?? "";
      grants[type] = (grants[type] ?? 0) + 1;
      if (type === "authorization_code") {
        const g = codes.get(form.get("code") ?? "");
        codes.delete(form.get("code") ?? "");
        const verifier = form.get("code_verifier");
        const pkceOk =
          g?.challenge == null ||
          (verifier !== null && createHash("sha256").update(verifier).digest("base64url") === g.challenge);
        if (!g || g.redirectUri !== form.get("redirect_uri") || !pkceOk) {
          const code =
            style === "github"
              ? "bad_verification_code"
              : style === "slack"
                ? "invalid_code"
                : "invalid_grant";
          return refuse(res, code, "The code passed is incorrect or expired.");
        }
        return send(res, 200, issue(g, false), form_);
      }
      if (type === "refresh_token") {
        const rt = form.get("refresh_token") ?? "";
        const g = refreshes.get(rt);
        if (!g || revoked.has(rt)) {
          const code =
            style === "github"
              ? "bad_refresh_token"
              : style === "slack"
                ? "invalid_refresh_token"
                : "invalid_grant";
          return refuse(res, code, "The refresh token passed is incorrect or expired.");
        }
        refreshes.delete(rt);
        return send(res, 200, issue(g, true), form_);
      }
      return refuse(res, "unsupported_grant_type", type);
    }
    if (url.pathname.startsWith("/api/")) {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
      const body = await readBody(req);
      api.calls.push({ path: url.pathname, token: bearer });
      if (!access.has(bearer)) return send(res, 401, { message: "Bad credentials" });
      return serveApi(req, res, url, body, bearer);
    }
    send(res, 404, { error: "not_found" });
  };

  const api: Api = { calls: [], release: () => {}, bigSize: 8 * 1024 * 1024 };
  /** The provider's API: what a proxy test needs to see (echo, a large streamed body, redirects, 429). */
  const serveApi = (req: IncomingMessage, res: ServerResponse, url: URL, body: string, bearer: string) => {
    switch (url.pathname) {
      case "/api/echo":
        return send(res, 200, {
          method: req.method,
          path: url.pathname,
          query: url.search,
          headers: req.headers,
          body,
          token_seen: bearer,
        });
      case "/api/limited":
        res.writeHead(429, { "retry-after": "17", "content-type": "application/json" });
        return res.end(JSON.stringify({ message: "API rate limit exceeded" }));
      case "/api/redirect-same":
        res.writeHead(302, { location: "/api/echo?redirected=1" });
        return res.end();
      case "/api/redirect-other":
        res.writeHead(302, {
          location: `http://localhost:${(server.address() as AddressInfo).port}/api/echo`,
        });
        return res.end();
      case "/api/big": {
        // The first chunk, then the rest only once the test has seen it: a proxy that buffered
        // the whole answer would never let it through.
        res.writeHead(200, {
          "content-type": "application/octet-stream",
          "content-length": String(api.bigSize),
        });
        const chunk = Buffer.alloc(64 * 1024, 7);
        res.write(chunk);
        api.release = () => {
          let sent = chunk.length;
          const more = () => {
            while (sent < api.bigSize) {
              const n = Math.min(chunk.length, api.bigSize - sent);
              sent += n;
              if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n)))
                return res.once("drain", more);
            }
            res.end();
          };
          more();
        };
        return;
      }
      default:
        return send(res, 200, { ok: true, path: url.pathname });
    }
  };

  const server: Server = createServer((req, res) => {
    handler(req, res).catch(() => {
      res.statusCode = 500;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    style,
    origin,
    authUrl: `${origin}${prefix}/authorize`,
    tokenUrl: `${origin}${prefix}/token`,
    apiBase: `${origin}/api`,
    clientId,
    clientSecret,
    grants,
    revoked,
    authorize(raw: string): URL {
      const url = new URL(raw);
      const problem = onAuthorizePath(url);
      if (problem !== null) throw new Error(`${style} authorize: ${problem}`);
      const q = url.searchParams;
      const redirect = new URL(q.get("redirect_uri") ?? "");
      const param = style === "slack" ? "user_scope" : "scope";
      const scopes = (q.get(param) ?? "").split(style === "slack" ? "," : " ").filter(Boolean);
      let offline = true;
      if (style === "google") offline = q.get("access_type") === "offline" && q.get("prompt") === "consent";
      if (style === "microsoft") offline = scopes.includes("offline_access");
      if (style === "notion") offline = false;
      const code = token("code");
      codes.set(code, { scopes, redirectUri: redirect.href, offline, challenge: q.get("code_challenge") });
      redirect.searchParams.set("code", code);
      redirect.searchParams.set("state", q.get("state") ?? "");
      return redirect;
    },
    live: (t) => access.has(t),
    kill: (t) => {
      access.delete(t);
    },
    api,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export const MICROSOFT_TENANT = TENANT;
