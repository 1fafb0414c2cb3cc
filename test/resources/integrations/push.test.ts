// Why over 300 lines: one suite per database covers every build-on-push path (signatures, replays, filters, poller, rotation, auth) on a shared fixture.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, it } from "node:test";
import { sign } from "@octokit/webhooks-methods";
import { integrations } from "../../../src/db/schema/codehost.ts";
import { LocalGitPoller } from "../../../src/resources/integrations/poller.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { eventually } from "../../helpers/eventually.ts";
import { git, workingRepo } from "../../helpers/git-fixtures.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { REPO_ROOT } from "../../helpers/process.ts";

const BASE = "/v1/integrations/forge/codehost";
const ROOT = realpathSync(mkdtempSync(join(tmpdir(), "slipway-push-")));

interface Outcome {
  deployment_id: string;
  revision_id: string | null;
  skipped: string | null;
}
interface Answer {
  event: string;
  ignored: string | null;
  deployments: Outcome[];
}

/** Repositories `app` and `mono` under `<root>/<unique>/team` (each database's suite its own) with an app config on main; watch_paths given or not. */
function makeRepos(root: string) {
  const team = join(root, randomUUID(), "team");
  mkdirSync(team, { recursive: true });
  const app = workingRepo(join(team, "app"), "main");
  writeFileSync(join(app, "slipway.json"), JSON.stringify({ start: "node server.js" }));
  git(app, "add", "-A");
  git(app, "commit", "-q", "-m", "config");
  const mono = workingRepo(join(team, "mono"), "main");
  mkdirSync(join(mono, "api"));
  writeFileSync(join(mono, "api", "index.js"), "1\n");
  writeFileSync(join(mono, "slipway.json"), JSON.stringify({ start: "node api", watch_paths: ["api/**"] }));
  git(mono, "add", "-A");
  git(mono, "commit", "-q", "-m", "config");
  return { team, app, mono };
}

function commitFile(repo: string, file: string, text: string, branch = "main"): string {
  git(repo, "checkout", "-q", branch);
  mkdirSync(join(repo, file, ".."), { recursive: true });
  writeFileSync(join(repo, file), text);
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", `change ${file}`);
  return git(repo, "rev-parse", "HEAD");
}

function pushPayload(url: string, ref: string, after: string, files: string[], extra = {}) {
  return JSON.stringify({
    ref,
    before: "0".repeat(40),
    after,
    deleted: false,
    repository: { html_url: url, clone_url: `${url}.git` },
    commits: [{ id: after, added: [], removed: [], modified: files }],
    ...extra,
  });
}

async function deliver(
  ctx: TestContext,
  integrationId: string,
  body: string,
  opts: { secret?: string; signature?: string; event?: string; delivery?: string } = {},
) {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "x-github-event": opts.event ?? "push",
    "x-github-delivery": opts.delivery ?? randomUUID(),
  };
  const signature = opts.signature ?? (opts.secret ? await sign(opts.secret, body) : undefined);
  if (signature) headers["x-hub-signature-256"] = signature;
  return ctx.app.inject({ method: "POST", url: `${BASE}/${integrationId}/webhook`, headers, payload: body });
}

async function api<T>(
  ctx: TestContext,
  method: "GET" | "POST",
  url: string,
  payload?: unknown,
  key?: string,
) {
  const res = await ctx.app.inject({
    method,
    url,
    headers: ctx.headers(key ?? ctx.keys.admin),
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });
  return { status: res.statusCode, body: res.json() as T };
}

async function revisionCount(ctx: TestContext, id: string): Promise<number> {
  const res = await api<{ resources: unknown[] }>(ctx, "GET", `/v2/deployments/${id}/revisions?limit=100`);
  return res.body.resources.length;
}

async function latest(ctx: TestContext, id: string) {
  const d = await api<{ latest_revision_id: string }>(ctx, "GET", `/v2/deployments/${id}`);
  const r = await api<{ source_revision_config: { repo_commit_sha: string | null } }>(
    ctx,
    "GET",
    `/v2/deployments/${id}/revisions/${d.body.latest_revision_id}`,
  );
  return { id: d.body.latest_revision_id, sha: r.body.source_revision_config.repo_commit_sha };
}

forEachDatabase(
  "build on push: signed code-host webhooks and the local_git poller",
  (suite) => {
    let repos: ReturnType<typeof makeRepos>;
    let integrationId = "";
    let secret = "";
    let appUrl = "";
    let monoUrl = "";
    let onPush = "";
    let notOnPush = "";
    let monoDep = "";

    const createDeployment = async (name: string, repoUrl: string, buildOnPush: boolean, ref = "main") => {
      const res = await api<{ id: string }>(suite.ctx, "POST", "/v2/deployments", {
        name,
        source: "codehost",
        source_config: { integration_id: integrationId, repo_url: repoUrl, build_on_push: buildOnPush },
        source_revision_config: { repo_ref: ref, framework_config_path: "slipway.json" },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.id;
    };

    before(async () => {
      const ctx = suite.ctx;
      const root = ctx.config.localGitRoots[0];
      assert.ok(root);
      repos = makeRepos(root);
      const created = await api<{ id: string; webhook_secret: string; has_webhook_secret: boolean }>(
        ctx,
        "POST",
        BASE,
        { kind: "local_git", path: repos.team },
      );
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.match(created.body.webhook_secret, /^swhk_/);
      assert.equal(created.body.has_webhook_secret, true);
      integrationId = created.body.id;
      secret = created.body.webhook_secret;
      const listed = await api<{ name: string; url: string }[]>(ctx, "GET", `${BASE}/${integrationId}/repos`);
      appUrl = listed.body.find((r) => r.name === "app")?.url ?? "";
      monoUrl = listed.body.find((r) => r.name === "mono")?.url ?? "";
      onPush = await createDeployment("on-push", appUrl, true);
      notOnPush = await createDeployment("not-on-push", appUrl, false);
      monoDep = await createDeployment("mono-api", monoUrl, true);
    });

    it("the secret is shown once: listing shows only that there is one, and it is stored encrypted", async () => {
      const ctx = suite.ctx;
      const listed = await api<Record<string, unknown>[]>(ctx, "GET", `${BASE}/install`);
      const mine = listed.body.find((i) => i.id === integrationId);
      assert.equal(mine?.has_webhook_secret, true);
      assert.equal(mine?.webhook_secret, undefined);
      const rows = await ctx.db.orm.select().from(integrations);
      const row = rows.find((r) => r.id === integrationId);
      assert.ok(row?.webhookSecretEnc?.startsWith("sw1."));
      assert.ok(!row?.webhookSecretEnc?.includes(secret));
    });

    it("a signed push to main makes a revision at the pushed commit for build_on_push deployments only", async () => {
      const ctx = suite.ctx;
      const sha = commitFile(repos.app, "server.js", "v2");
      const before = await revisionCount(ctx, notOnPush);
      // The URL as the host prints it: other case, .git suffix, trailing slash.
      const res = await deliver(
        ctx,
        integrationId,
        pushPayload(`${appUrl.toUpperCase()}/`, "refs/heads/main", sha, ["server.js"]),
        {
          secret,
        },
      );
      assert.equal(res.statusCode, 200, res.body);
      const answer = res.json() as Answer;
      assert.equal(answer.ignored, null);
      assert.equal(answer.deployments.length, 1);
      assert.equal(answer.deployments[0]?.deployment_id, onPush);
      const made = await latest(ctx, onPush);
      assert.equal(answer.deployments[0]?.revision_id, made.id);
      assert.equal(made.sha, sha, "the revision is pinned at the pushed commit");
      assert.equal(await revisionCount(ctx, notOnPush), before);
      // No API key acted: the audit log names the push itself.
      const audit = await api<Record<string, unknown>[] | { resources: Record<string, unknown>[] }>(
        ctx,
        "GET",
        `/v1/audit-log?action=deployments.push&resource_id=${onPush}`,
      );
      assert.equal(audit.status, 200, JSON.stringify(audit.body));
      const records = Array.isArray(audit.body) ? audit.body : audit.body.resources;
      assert.equal(records.length, 1);
      assert.equal(records[0]?.key_id, null);
      assert.equal(records[0]?.status_code, 201);
      assert.match(String(records[0]?.key_description), /code-host push/);
    });

    it("unsigned, mis-signed, other-secret and unknown-integration deliveries change nothing", async () => {
      const ctx = suite.ctx;
      const sha = commitFile(repos.app, "server.js", "v3");
      const body = pushPayload(appUrl, "refs/heads/main", sha, ["server.js"]);
      const count = await revisionCount(ctx, onPush);
      const missing = await deliver(ctx, integrationId, body);
      assert.equal(missing.statusCode, 401, missing.body);
      const wrong = await deliver(ctx, integrationId, body, { secret: "not-the-secret" });
      assert.equal(wrong.statusCode, 401);
      const garbage = await deliver(ctx, integrationId, body, { signature: "sha256=00" });
      assert.equal(garbage.statusCode, 401);
      // Signed correctly, then the body changed: the signature covers the raw bytes.
      const signature = await sign(secret, body);
      const tampered = await deliver(
        ctx,
        integrationId,
        body.replace("refs/heads/main", "refs/heads/mainx"),
        {
          signature,
        },
      );
      assert.equal(tampered.statusCode, 401);
      // Another integration (its own secret) does not accept this one's signature.
      const otherDir = join(repos.team, "..", "other-team");
      mkdirSync(otherDir, { recursive: true });
      const other = await api<{ id: string; webhook_secret: string }>(ctx, "POST", BASE, {
        kind: "local_git",
        path: otherDir,
      });
      assert.equal(other.status, 201, JSON.stringify(other.body));
      const res = await deliver(ctx, other.body.id, body, { secret });
      assert.equal(res.statusCode, 401);
      const unknown = await deliver(ctx, randomUUID(), body, { secret });
      assert.equal(unknown.statusCode, 404);
      assert.equal(await revisionCount(ctx, onPush), count, "no revision was made");
    });

    it("a replayed delivery id does nothing; ping is answered; other events are ignored", async () => {
      const ctx = suite.ctx;
      const sha = commitFile(repos.app, "server.js", "v4");
      const body = pushPayload(appUrl, "refs/heads/main", sha, ["server.js"]);
      const delivery = randomUUID();
      const first = await deliver(ctx, integrationId, body, { secret, delivery });
      assert.equal((first.json() as Answer).deployments[0]?.revision_id !== null, true);
      const count = await revisionCount(ctx, onPush);
      const again = await deliver(ctx, integrationId, body, { secret, delivery });
      assert.equal(again.statusCode, 200);
      assert.match((again.json() as Answer).ignored ?? "", /already handled/);
      assert.equal(await revisionCount(ctx, onPush), count);
      const ping = await deliver(ctx, integrationId, JSON.stringify({ zen: "Keep it simple." }), {
        secret,
        event: "ping",
      });
      assert.equal(ping.statusCode, 200);
      const issues = await deliver(ctx, integrationId, JSON.stringify({ action: "opened" }), {
        secret,
        event: "issues",
      });
      assert.equal(issues.statusCode, 202);
      assert.equal(await revisionCount(ctx, onPush), count);
    });

    it("a tag push and a branch deletion build nothing; neither does another branch", async () => {
      const ctx = suite.ctx;
      const sha = git(repos.app, "rev-parse", "HEAD");
      const count = await revisionCount(ctx, onPush);
      const tag = await deliver(ctx, integrationId, pushPayload(appUrl, "refs/tags/v9", sha, ["server.js"]), {
        secret,
      });
      assert.match((tag.json() as Answer).ignored ?? "", /tags never/);
      const deleted = await deliver(
        ctx,
        integrationId,
        pushPayload(appUrl, "refs/heads/main", "0".repeat(40), [], { deleted: true }),
        { secret },
      );
      assert.match((deleted.json() as Answer).ignored ?? "", /deleted/);
      git(repos.app, "branch", "-f", "feature");
      const feature = git(repos.app, "rev-parse", "feature");
      const other = await deliver(
        ctx,
        integrationId,
        pushPayload(appUrl, "refs/heads/feature", feature, ["x"]),
        {
          secret,
        },
      );
      assert.deepEqual((other.json() as Answer).deployments, []);
      assert.equal(await revisionCount(ctx, onPush), count);
    });

    it("watch_paths: a push touching none of the globs is skipped; one touching them builds", async () => {
      const ctx = suite.ctx;
      const docs = commitFile(repos.mono, "docs/readme.md", "docs");
      const count = await revisionCount(ctx, monoDep);
      const skip = await deliver(
        ctx,
        integrationId,
        pushPayload(monoUrl, "refs/heads/main", docs, ["docs/readme.md"]),
        {
          secret,
        },
      );
      const outcome = (skip.json() as Answer).deployments[0];
      assert.equal(outcome?.revision_id, null);
      assert.match(outcome?.skipped ?? "", /watch_paths/);
      assert.equal(await revisionCount(ctx, monoDep), count);
      const api2 = commitFile(repos.mono, "api/index.js", "2");
      const build = await deliver(
        ctx,
        integrationId,
        pushPayload(monoUrl, "refs/heads/main", api2, ["api/index.js"]),
        {
          secret,
        },
      );
      assert.notEqual((build.json() as Answer).deployments[0]?.revision_id, null);
      assert.equal((await latest(ctx, monoDep)).sha, api2);
    });

    it("the poller notices a new head of a watched branch and builds it, honouring watch_paths", async () => {
      const ctx = suite.ctx;
      const poller = new LocalGitPoller({
        db: ctx.db,
        keyring: ctx.keyring,
        config: ctx.config,
        intervalMs: 0,
        log: { warn: () => {} },
      });
      await poller.pass(); // first sight: heads are only recorded
      const appCount = await revisionCount(ctx, onPush);
      const monoCount = await revisionCount(ctx, monoDep);
      await poller.pass();
      assert.equal(await revisionCount(ctx, onPush), appCount, "nothing moved, nothing built");
      const sha = commitFile(repos.app, "server.js", "polled");
      commitFile(repos.mono, "docs/other.md", "not watched");
      await poller.pass();
      // The poller writes in this process but not through the API: on PostgreSQL its revision
      // shows in API reads once the read cache hears of it (NOTIFY, milliseconds).
      await eventually(
        "the polled revision",
        async () => (await revisionCount(ctx, onPush)) === appCount + 1,
      );
      assert.equal((await latest(ctx, onPush)).sha, sha);
      assert.equal(await revisionCount(ctx, monoDep), monoCount, "watch_paths ruled the mono push out");
      // A push delivered for the same commit afterwards (the hook racing the poller) adds nothing.
      const res = await deliver(
        ctx,
        integrationId,
        pushPayload(appUrl, "refs/heads/main", sha, ["server.js"]),
        {
          secret,
        },
      );
      assert.match((res.json() as Answer).deployments[0]?.skipped ?? "", /already at this commit/);
      await poller.pass();
      assert.equal(await revisionCount(ctx, onPush), appCount + 1);
    });

    it("the poller builds a push that landed before its first look, once the latest revision has its commit", async () => {
      const ctx = suite.ctx;
      const poller = new LocalGitPoller({
        db: ctx.db,
        keyring: ctx.keyring,
        config: ctx.config,
        intervalMs: 0,
        log: { warn: () => {} },
      });
      git(repos.app, "checkout", "-q", "main");
      git(repos.app, "checkout", "-q", "-b", "late");
      const created = commitFile(repos.app, "late.txt", "at creation", "late");
      const late = await createDeployment("late-push", appUrl, true, "late");
      // The push lands before the poller first looks, while the first revision has no commit yet.
      const pushed = commitFile(repos.app, "late.txt", "pushed at once", "late");
      await poller.pass();
      assert.equal(await revisionCount(ctx, late), 1, "no commit to compare with yet: the poller waits");
      // The first revision resolves its commit (here by a push of the creation-time head).
      const resolved = await deliver(
        ctx,
        integrationId,
        pushPayload(appUrl, "refs/heads/late", created, ["late.txt"]),
        {
          secret,
        },
      );
      assert.equal(resolved.statusCode, 200, resolved.body);
      // On PostgreSQL API reads see a write once the read cache hears of it (NOTIFY, milliseconds).
      await eventually("the resolved commit", async () =>
        (await latest(ctx, late)).sha === created ? true : undefined,
      );
      await poller.pass();
      await eventually("the revision of the early push", async () =>
        (await latest(ctx, late)).sha === pushed ? true : undefined,
      );
      assert.equal(await revisionCount(ctx, late), 3);
      await poller.pass();
      assert.equal(await revisionCount(ctx, late), 3, "a head the latest revision is at builds nothing");
    });

    it("the openssl + curl post-receive snippet of docs/codehost.md sends a push the webhook accepts", async () => {
      const ctx = suite.ctx;
      const server = await ctx.app.listen({ port: 0, host: "127.0.0.1" });
      const secretFile = join(repos.team, "..", "hook.secret");
      writeFileSync(secretFile, secret);
      const old = git(repos.app, "rev-parse", "HEAD");
      const sha = commitFile(repos.app, "server.js", "snippet");
      // The snippet as the page shows it, with this test's secret file, URL and integration.
      const page = readFileSync(join(REPO_ROOT, "docs", "codehost.md"), "utf8");
      const shown = /```sh\n(#!\/bin\/sh\nwhile read old new ref;[^`]*?)```/.exec(page)?.[1];
      assert.ok(shown, "docs/codehost.md shows the post-receive snippet");
      const placeholders: [string, string][] = [
        ["/etc/slipway/hook.secret", secretFile],
        ["http://127.0.0.1:8080", server],
        ["<integration id>", integrationId],
      ];
      let snippet = shown;
      for (const [placeholder, value] of placeholders) {
        assert.ok(snippet.includes(placeholder), `the snippet names ${placeholder}`);
        snippet = snippet.replaceAll(placeholder, value);
      }
      const out = await new Promise<string>((resolve, reject) => {
        const child = execFile("sh", ["-c", snippet], { cwd: repos.app }, (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(stdout),
        );
        child.stdin?.end(`${old} ${sha} refs/heads/main\n`);
      });
      const answer = JSON.parse(out) as Answer;
      assert.equal(answer.deployments[0]?.deployment_id, onPush);
      assert.notEqual(answer.deployments[0]?.revision_id, null);
      assert.equal((await latest(ctx, onPush)).sha, sha);
    });

    it("rotation: the new secret works at once and the old one is refused", async () => {
      const ctx = suite.ctx;
      const rotated = await api<{ webhook_secret: string; has_webhook_secret: boolean }>(
        ctx,
        "POST",
        `${BASE}/${integrationId}/webhook-secret`,
      );
      assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
      assert.notEqual(rotated.body.webhook_secret, secret);
      const sha = commitFile(repos.app, "server.js", "rotated");
      const body = pushPayload(appUrl, "refs/heads/main", sha, ["server.js"]);
      assert.equal((await deliver(ctx, integrationId, body, { secret })).statusCode, 401);
      const ok = await deliver(ctx, integrationId, body, { secret: rotated.body.webhook_secret });
      assert.equal(ok.statusCode, 200);
      secret = rotated.body.webhook_secret;
    });

    it("an integration without a secret (made before build on push) answers 401 saying to generate one", async () => {
      const ctx = suite.ctx;
      const [row] = await ctx.db.orm
        .insert(integrations)
        .values({ organizationId: ctx.orgId, kind: "local_git", config: { path: "/nowhere" }, name: "old" })
        .returning();
      assert.ok(row);
      const res = await deliver(ctx, row.id, "{}", { secret: "anything" });
      assert.equal(res.statusCode, 401);
      assert.match((res.json() as { detail: string }).detail, /webhook-secret/);
      const listed = await api<Record<string, unknown>[]>(ctx, "GET", `${BASE}/install`);
      assert.equal(listed.body.find((i) => i.id === row.id)?.has_webhook_secret, false);
    });

    it("viewers and members cannot rotate; another organization's integration is a 404", async () => {
      const ctx = suite.ctx;
      for (const key of [ctx.keys.viewer, ctx.keys.member]) {
        const res = await api<unknown>(
          ctx,
          "POST",
          `${BASE}/${integrationId}/webhook-secret`,
          undefined,
          key,
        );
        assert.equal(res.status, 403);
      }
      const theirs = await api<{ detail: string }>(
        ctx,
        "POST",
        `${BASE}/${integrationId}/webhook-secret`,
        undefined,
        ctx.other.admin,
      );
      assert.equal(theirs.status, 404);
      assert.doesNotMatch(JSON.stringify(theirs.body), /swhk_/);
    });

    authMatrix(suite, {
      method: "POST",
      url: () => `${BASE}/${integrationId}/webhook-secret`,
      role: "admin",
      otherTenantUrl: async (ctx) => {
        const [row] = await ctx.db.orm
          .insert(integrations)
          .values({
            organizationId: ctx.other.orgId,
            kind: "local_git",
            config: { path: "/x" },
            name: "theirs",
          })
          .returning();
        return `${BASE}/${row?.id}/webhook-secret`;
      },
    });
  },
  { env: { SLIPWAY_LOCAL_GIT_ROOTS: ROOT } },
);
