// Why over 300 lines: the stand-in implements each GitHub endpoint Slipway calls (app JWT, tokens, repositories, refs, contents) in one server.
import { createPublicKey, generateKeyPairSync, type KeyObject, randomBytes, verify } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for the GitHub REST API (the one SaaS the tests cannot reach). It speaks
 * GitHub's wire format for the endpoints Slipway uses and checks what GitHub checks: the app JWT's
 * RS256 signature against the app's public key and its iss/iat/exp claims, and the installation
 * token on later calls.
 */

export interface StandinRepo {
  id: number;
  name: string;
  owner: string;
  default_branch: string;
  /** Full ref names that exist, e.g. refs/heads/main, refs/tags/v1. Empty: an empty repository. */
  refs: string[];
  /** What the contents API serves: commit sha → path → text. */
  files?: Record<string, Record<string, string>>;
}

export interface StandinInstallation {
  account: string;
  repos: StandinRepo[];
}

export interface GithubStandinOptions {
  appId: string;
  /** The app's public key: JWTs must verify against it. */
  publicKey: KeyObject | string;
  installations: Record<number, StandinInstallation>;
  /** GitHub caps per_page at 100. */
  maxPerPage?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  status: number;
}

/** An RSA key pair as GitHub issues them for apps: the private key in PKCS#1 PEM. */
export function generateAppKeys(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  return { privateKey, publicKey };
}

/** `count` repositories of one owner, each with a main branch (or `develop` for every 7th) and a tag. */
export function manyRepos(owner: string, count: number, firstId = 1000): StandinRepo[] {
  return Array.from({ length: count }, (_, i) => {
    const branch = i % 7 === 3 ? "develop" : "main";
    return {
      id: firstId + i,
      name: `repo-${String(i).padStart(3, "0")}`,
      owner,
      default_branch: branch,
      refs: [`refs/heads/${branch}`, "refs/heads/feature/x", "refs/tags/v1.0.0"],
    };
  });
}

const DOCS = "https://docs.github.com/rest";

function b64json(part: string): unknown {
  return JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
}

export class GithubStandin {
  readonly requests: RecordedRequest[] = [];
  /** When set, every request is answered with this status (an outage). */
  failWith: number | undefined;
  private readonly tokens = new Map<string, { installationId: number; expiresAt: number }>();
  private readonly publicKey: KeyObject;
  private server: Server | undefined;
  url = "";

  private constructor(private readonly opts: GithubStandinOptions) {
    this.publicKey = typeof opts.publicKey === "string" ? createPublicKey(opts.publicKey) : opts.publicKey;
  }

  static async start(opts: GithubStandinOptions): Promise<GithubStandin> {
    const standin = new GithubStandin(opts);
    const server = createServer((req, res) => {
      standin.handle(req, res).catch((err: Error) => {
        standin.send(res, 500, { message: err.message });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    standin.server = server;
    standin.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return standin;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Whether GitHub would accept this installation token now. */
  isIssuedToken(token: string): boolean {
    const t = this.tokens.get(token);
    return t !== undefined && t.expiresAt > Date.now();
  }

  issuedTokenCount(): number {
    return this.tokens.size;
  }

  private send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(text),
      "x-github-media-type": "github.v3; format=json",
      ...headers,
    });
    res.end(text);
  }

  private record(req: IncomingMessage, url: URL, status: number): void {
    this.requests.push({
      method: req.method ?? "",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      status,
    });
  }

  private credential(req: IncomingMessage): string | undefined {
    const m = /^(?:bearer|token)\s+(\S+)$/i.exec(req.headers.authorization ?? "");
    return m?.[1];
  }

  /** Why the app JWT is not acceptable, or undefined when it is. */
  private jwtProblem(jwt: string | undefined): string | undefined {
    if (jwt === undefined) return "Requires authentication";
    const parts = jwt.split(".");
    if (parts.length !== 3) return "A JSON web token could not be decoded";
    const [h, p, s] = parts as [string, string, string];
    let header: { alg?: unknown };
    let claims: { iss?: unknown; iat?: unknown; exp?: unknown };
    try {
      header = b64json(h) as typeof header;
      claims = b64json(p) as typeof claims;
    } catch {
      return "A JSON web token could not be decoded";
    }
    if (header.alg !== "RS256") return "A JSON web token could not be decoded";
    const signed = verify("sha256", Buffer.from(`${h}.${p}`), this.publicKey, Buffer.from(s, "base64url"));
    if (!signed) return "A JSON web token could not be decoded";
    const now = Math.floor(Date.now() / 1000);
    if (String(claims.iss) !== this.opts.appId) return "Integration not found";
    if (typeof claims.exp !== "number" || claims.exp <= now) {
      return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires";
    }
    if (typeof claims.iat !== "number" || claims.iat > now + 60) {
      return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued";
    }
    if (claims.exp - claims.iat > 660) {
      return "'Expiration time' claim ('exp') is too far in the future";
    }
    return undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const reply = (status: number, body: unknown, headers?: Record<string, string>) => {
      this.record(req, url, status);
      this.send(res, status, body, headers);
    };
    // Drain any body: none of these endpoints needs one.
    for await (const _ of req) {
    }
    if (this.failWith !== undefined) {
      return reply(this.failWith, { message: "Service unavailable", documentation_url: DOCS });
    }
    const path = url.pathname;
    const app = /^\/app\/installations\/(\d+)(\/access_tokens)?$/.exec(path);
    if (app) {
      const problem = this.jwtProblem(this.credential(req));
      if (problem) return reply(401, { message: problem, documentation_url: DOCS });
      const id = Number(app[1]);
      const installation = this.opts.installations[id];
      if (!installation) return reply(404, { message: "Not Found", documentation_url: DOCS });
      if (app[2] === undefined && req.method === "GET") {
        return reply(200, {
          id,
          account: { login: installation.account, id: id * 10, type: "Organization" },
          repository_selection: "all",
          app_id: Number(this.opts.appId),
        });
      }
      if (app[2] !== undefined && req.method === "POST") {
        const token = `ghs_${randomBytes(18).toString("base64url")}`;
        const expiresAt = Date.now() + 3600_000;
        this.tokens.set(token, { installationId: id, expiresAt });
        return reply(201, {
          token,
          expires_at: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, "Z"),
          permissions: { contents: "read", metadata: "read" },
          repository_selection: "all",
        });
      }
      return reply(404, { message: "Not Found", documentation_url: DOCS });
    }

    // Everything else needs an installation token.
    const token = this.credential(req);
    const grant = token === undefined ? undefined : this.tokens.get(token);
    if (!grant || grant.expiresAt <= Date.now()) {
      return reply(401, { message: "Bad credentials", documentation_url: DOCS });
    }
    const installation = this.opts.installations[grant.installationId];
    if (!installation) return reply(404, { message: "Not Found", documentation_url: DOCS });

    if (path === "/installation/repositories" && req.method === "GET") {
      const max = this.opts.maxPerPage ?? 100;
      const perPage = Math.min(Math.max(Number(url.searchParams.get("per_page") ?? 30) || 30, 1), max);
      const page = Math.max(Number(url.searchParams.get("page") ?? 1) || 1, 1);
      const all = installation.repos;
      const last = Math.max(Math.ceil(all.length / perPage), 1);
      const slice = all.slice((page - 1) * perPage, page * perPage);
      const link = (n: number, rel: string) =>
        `<${this.url}/installation/repositories?per_page=${perPage}&page=${n}>; rel="${rel}"`;
      const links: string[] = [];
      if (page > 1) links.push(link(page - 1, "prev"));
      if (page < last) links.push(link(page + 1, "next"), link(last, "last"));
      if (page > 1) links.push(link(1, "first"));
      return reply(
        200,
        {
          total_count: all.length,
          repository_selection: "all",
          repositories: slice.map((r) => this.repoJson(r)),
        },
        links.length > 0 ? { link: links.join(", ") } : {},
      );
    }

    const ref = /^\/repos\/([^/]+)\/([^/]+)\/git\/ref\/(.+)$/.exec(path);
    if (ref && req.method === "GET") {
      const [owner, name, refName] = [ref[1], ref[2], ref[3]].map((x) => decodeURIComponent(x ?? ""));
      const repo = installation.repos.find((r) => r.owner === owner && r.name === name);
      if (!repo) return reply(404, { message: "Not Found", documentation_url: DOCS });
      if (repo.refs.length === 0)
        return reply(409, { message: "Git Repository is empty.", documentation_url: DOCS });
      const full = `refs/${refName}`;
      if (!repo.refs.includes(full)) return reply(404, { message: "Not Found", documentation_url: DOCS });
      const sha = Buffer.from(`${repo.id}:${full}`).toString("hex").padEnd(40, "0").slice(0, 40);
      return reply(200, {
        ref: full,
        node_id: `REF_${repo.id}`,
        url: `${this.url}/repos/${owner}/${name}/git/${full}`,
        object: { sha, type: "commit", url: `${this.url}/repos/${owner}/${name}/git/commits/${sha}` },
      });
    }
    const contents = /^\/repos\/([^/]+)\/([^/]+)\/contents\/(.+)$/.exec(path);
    if (contents && req.method === "GET") {
      const [owner, name, file] = [contents[1], contents[2], contents[3]].map((x) =>
        decodeURIComponent(x ?? ""),
      );
      const repo = installation.repos.find((r) => r.owner === owner && r.name === name);
      const sha = url.searchParams.get("ref") ?? "";
      const text = repo?.files?.[sha]?.[file ?? ""];
      if (text === undefined) return reply(404, { message: "Not Found", documentation_url: DOCS });
      // GitHub wraps the base64 at 60 characters.
      const content = (
        Buffer.from(text)
          .toString("base64")
          .match(/.{1,60}/g) ?? []
      ).join("\n");
      return reply(200, {
        type: "file",
        encoding: "base64",
        size: Buffer.byteLength(text),
        name: file?.split("/").pop(),
        path: file,
        content,
        sha: Buffer.from(`${sha}:${file}`).toString("hex").slice(0, 40),
      });
    }
    return reply(404, { message: "Not Found", documentation_url: DOCS });
  }

  private repoJson(r: StandinRepo) {
    return {
      id: r.id,
      node_id: `R_${r.id}`,
      name: r.name,
      full_name: `${r.owner}/${r.name}`,
      private: false,
      owner: { login: r.owner, id: 1, type: "Organization" },
      html_url: `${this.url}/${r.owner}/${r.name}`,
      clone_url: `${this.url}/${r.owner}/${r.name}.git`,
      url: `${this.url}/repos/${r.owner}/${r.name}`,
      default_branch: r.default_branch,
    };
  }
}
