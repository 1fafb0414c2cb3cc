import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "../helpers/harness.ts";

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: "Slipway Test",
  GIT_AUTHOR_EMAIL: "test@slipway.invalid",
  GIT_COMMITTER_NAME: "Slipway Test",
  GIT_COMMITTER_EMAIL: "test@slipway.invalid",
};

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, env: GIT_ENV, encoding: "utf8" }).trim();
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** A directory allowed as SLIPWAY_LOCAL_GIT_ROOTS, with the integration's folder inside. */
export function gitRoot(): { root: string; team: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "slipway-e2e-git-")));
  const team = join(root, "team");
  mkdirSync(team);
  return { root, team };
}

/**
 * A tiny HTTP app without dependencies (so builds need no network): answers every path with its
 * version, the GREETING secret from its environment and its pid. `mode` makes broken variants.
 */
export interface AppVersion {
  version: string;
  /** "exit": the process exits at once; "unhealthy": it answers 500 forever. */
  mode?: "ok" | "exit" | "unhealthy";
  install?: string;
  /** Extra keys of slipway.json (`worker`, `healthcheck_timeout_s`, …). */
  config?: Record<string, unknown>;
}

function serverJs(v: AppVersion): string {
  if (v.mode === "exit") return `console.log("starting and exiting"); process.exit(3);\n`;
  const status = v.mode === "unhealthy" ? 500 : 200;
  return `const fs = require("node:fs");
const http = require("node:http");
// GET /crash leaves a flag in HOME (the app's tree is read-only) that makes every start fail until
// it is removed.
const flag = require("node:path").join(process.env.HOME, "crash.flag");
if (fs.existsSync(flag)) { console.log("crash flag present: exiting"); process.exit(1); }
const server = http.createServer((req, res) => {
  // GET /slow answers after 300 ms: load that keeps requests in flight (autoscaling).
  if (req.url === "/slow") {
    setTimeout(() => res.end("slow"), 300);
    return;
  }
  if (req.url === "/crash") {
    fs.writeFileSync(flag, "x");
    res.end("bye");
    setTimeout(() => process.exit(1), 10);
    return;
  }
  res.writeHead(${status}, { "content-type": "application/json" });
  res.end(JSON.stringify({ version: ${JSON.stringify(v.version)}, greeting: process.env.GREETING ?? null,
    db: process.env.DATABASE_URI ? "set" : null, pid: process.pid, path: req.url }));
});
server.keepAliveTimeout = 1000;
server.listen(Number(process.env.PORT), "127.0.0.1", () => console.log("listening on " + process.env.PORT));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
`;
}

export class AppRepo {
  readonly dir: string;
  constructor(team: string, name: string) {
    this.dir = join(team, name);
    mkdirSync(this.dir, { recursive: true });
    git(this.dir, "init", "-q", "-b", "main");
  }

  /** Writes a version of the app on `branch` (created from main when new) and returns the commit. */
  commit(v: AppVersion, branch = "main"): string {
    const current = git(this.dir, "symbolic-ref", "--short", "HEAD");
    if (current !== branch) {
      const exists = git(this.dir, "branch", "--list", branch) !== "";
      git(this.dir, "checkout", "-q", ...(exists ? [branch] : ["-b", branch]));
    }
    writeFileSync(join(this.dir, "server.js"), serverJs(v));
    writeFileSync(
      join(this.dir, "slipway.json"),
      JSON.stringify({
        start: "node server.js",
        healthcheck: "/health",
        env: { APP_MODE: v.mode ?? "ok" },
        ...v.config,
      }),
    );
    git(this.dir, "add", "-A");
    git(this.dir, "commit", "-q", "--allow-empty", "-m", `version ${v.version}`);
    const sha = git(this.dir, "rev-parse", "HEAD");
    if (branch !== "main") git(this.dir, "checkout", "-q", "main");
    return sha;
  }
}

export interface AppAnswer {
  status: number;
  body: { version?: string; greeting?: string | null; db?: string | null; pid?: number };
}

/** GET through the apps listener, with the Host header of the deployment's URL. */
export function appGet(customUrl: string, path = "/"): Promise<AppAnswer> {
  const u = new URL(customUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port: Number(u.port), path, headers: { host: u.host }, agent: false },
      (res) => {
        let data = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          data += c;
        });
        res.on("end", () => {
          let body: AppAnswer["body"] = {};
          try {
            body = JSON.parse(data) as AppAnswer["body"];
          } catch {
            body = {};
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** The API, as a client calls it. */
export class Api {
  constructor(private readonly ctx: TestContext) {}

  async call<T>(
    method: "GET" | "POST" | "PATCH" | "DELETE",
    url: string,
    body?: unknown,
    status?: number,
  ): Promise<T> {
    const res = await this.ctx.app.inject({
      method,
      url,
      headers: this.ctx.headers(
        this.ctx.keys.admin,
        body === undefined ? {} : { "content-type": "application/json" },
      ),
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
    if (status !== undefined ? res.statusCode !== status : res.statusCode >= 400) {
      throw new Error(`${method} ${url} → ${res.statusCode}: ${res.body}`);
    }
    // 204 (DELETE) has no body.
    return (res.body === "" ? undefined : res.json()) as T;
  }

  /** The organization's local_git integration over `team`: created on first use, then reused. */
  async integration(team: string): Promise<string> {
    const existing = await this.call<Array<{ id: string; path: string | null }>>(
      "GET",
      "/v1/integrations/forge/codehost/install",
    );
    const found = existing.find((i) => i.path === team);
    if (found) return found.id;
    const created = await this.call<{ id: string }>(
      "POST",
      "/v1/integrations/forge/codehost",
      { kind: "local_git", path: team },
      201,
    );
    return created.id;
  }

  async repoUrl(integrationId: string, name: string): Promise<string> {
    const repos = await this.call<{ name: string; url: string }[]>(
      "GET",
      `/v1/integrations/forge/codehost/${integrationId}/repos`,
    );
    const repo = repos.find((r) => r.name === name);
    if (!repo) throw new Error(`no repository ${name} in ${JSON.stringify(repos)}`);
    return repo.url;
  }

  createCodehost(opts: {
    name: string;
    integrationId: string;
    repoUrl: string;
    ref?: string;
    secrets?: { name: string; value: string }[];
    installCommand?: string;
  }): Promise<Deployment> {
    return this.call<Deployment>(
      "POST",
      "/v2/deployments",
      {
        name: opts.name,
        source: "codehost",
        source_config: {
          integration_id: opts.integrationId,
          repo_url: opts.repoUrl,
          ...(opts.installCommand ? { install_command: opts.installCommand } : {}),
        },
        source_revision_config: { repo_ref: opts.ref ?? "main", framework_config_path: "slipway.json" },
        secrets: opts.secrets ?? [],
      },
      201,
    );
  }

  deployment(id: string): Promise<Deployment> {
    return this.call<Deployment>("GET", `/v2/deployments/${id}`);
  }

  patch(id: string, body: unknown): Promise<Deployment> {
    return this.call<Deployment>("PATCH", `/v2/deployments/${id}`, body);
  }

  revision(id: string, rid: string): Promise<Revision> {
    return this.call<Revision>("GET", `/v2/deployments/${id}/revisions/${rid}`);
  }

  async logs(id: string, rid: string, type: "build" | "deploy"): Promise<string[]> {
    const lines = await this.call<{ line: string }[]>(
      "GET",
      `/v2/deployments/${id}/revisions/${rid}/logs?type=${type}&limit=5000`,
    );
    return lines.map((l) => l.line);
  }
}

export interface Deployment {
  id: string;
  name: string;
  status: string;
  latest_revision_id: string | null;
  active_revision_id: string | null;
  source_config: { custom_url: string | null };
}

export interface Revision {
  id: string;
  status: string;
  status_history: { status: string; at: string }[];
  source_revision_config: { repo_commit_sha: string | null; repo_ref: string | null };
}

/** Config for an end-to-end suite: the reconciler on (it is started by the suite), short timings. */
export function e2eEnv(root: string, appsPort: number): Record<string, string> {
  return {
    SLIPWAY_RECONCILER: "true",
    SLIPWAY_RECONCILER_POLL_MS: "200",
    SLIPWAY_RECONCILER_LEASE_MS: "5000",
    SLIPWAY_LOCAL_GIT_ROOTS: root,
    SLIPWAY_APPS_PORT: String(appsPort),
    SLIPWAY_HEALTH_TIMEOUT_MS: "3000",
  };
}

/** Requests the app in a loop until `done`, collecting the versions seen (in order) and any failure. */
export async function loopRequests(
  url: string,
  done: () => boolean,
): Promise<{ versions: string[]; failures: AppAnswer[] }> {
  const versions: string[] = [];
  const failures: AppAnswer[] = [];
  while (!done()) {
    try {
      const a = await appGet(url);
      if (a.status === 200 && a.body.version) {
        if (versions.at(-1) !== a.body.version) versions.push(a.body.version);
      } else failures.push(a);
    } catch (err) {
      failures.push({ status: 0, body: { version: String(err) } });
    }
  }
  return { versions, failures };
}

/** A deployed codehost app: the repository, its integration, the deployment and its URL. */
export interface Deployed {
  api: Api;
  repo: AppRepo;
  integrationId: string;
  repoUrl: string;
  dep: Deployment;
  firstRevision: string;
  firstSha: string;
  url: string;
}

/** Creates repository `name` at version 1, a local_git integration and a codehost deployment of it. */
export async function createDeployed(
  ctx: TestContext,
  team: string,
  name: string,
  settle: (rid: string) => Promise<string>,
): Promise<Deployed> {
  const api = new Api(ctx);
  const repo = new AppRepo(team, name);
  const firstSha = repo.commit({ version: "1" });
  const integrationId = await api.integration(team);
  const repoUrl = await api.repoUrl(integrationId, name);
  const dep = await api.createCodehost({
    name,
    integrationId,
    repoUrl,
    secrets: [{ name: "GREETING", value: "greeting-secret-value" }],
  });
  if (!dep.latest_revision_id) throw new Error("no first revision");
  const status = await settle(dep.latest_revision_id);
  if (status !== "DEPLOYED") throw new Error(`first revision ended ${status}`);
  const d = await api.deployment(dep.id);
  if (!d.source_config.custom_url) throw new Error("no custom_url");
  return {
    api,
    repo,
    integrationId,
    repoUrl,
    dep: d,
    firstRevision: dep.latest_revision_id,
    firstSha,
    url: d.source_config.custom_url,
  };
}
