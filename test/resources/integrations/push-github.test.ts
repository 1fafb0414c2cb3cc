import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { after, before, it } from "node:test";
import { sign } from "@octokit/webhooks-methods";
import { GithubStandin, generateAppKeys, type StandinRepo } from "../../helpers/github-standin.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

const BASE = "/v1/integrations/forge/codehost";
const APP_ID = "4711";
const INSTALLATION = 99;
const keys = generateAppKeys();
const sha = () => randomBytes(20).toString("hex");
const SHAS = { web: sha(), docsOnly: sha(), apiChange: sha() };
const repos: StandinRepo[] = [
  { id: 1, name: "web", owner: "acme", default_branch: "main", refs: ["refs/heads/main", "refs/tags/v1"] },
  {
    id: 2,
    name: "mono",
    owner: "acme",
    default_branch: "main",
    refs: ["refs/heads/main"],
    files: Object.fromEntries(
      [SHAS.docsOnly, SHAS.apiChange].map((s) => [
        s,
        { "slipway.json": JSON.stringify({ start: "node api", watch_paths: ["api/**", "package.json"] }) },
      ]),
    ),
  },
];
const standin = await GithubStandin.start({
  appId: APP_ID,
  publicKey: keys.publicKey,
  installations: { [INSTALLATION]: { account: "acme", repos } },
});
after(() => standin.close());

/** A push event as GitHub sends it (the fields Slipway reads and the ones around them). */
function githubPush(repo: string, ref: string, after: string, files: string[]) {
  const html = `${standin.url}/acme/${repo}`;
  return JSON.stringify({
    ref,
    before: sha(),
    after,
    created: false,
    deleted: false,
    forced: false,
    base_ref: null,
    compare: `${html}/compare/a...b`,
    commits: [
      {
        id: after,
        distinct: true,
        message: "change",
        added: [],
        removed: [],
        modified: files,
        url: `${html}/commit/${after}`,
      },
    ],
    head_commit: { id: after, added: [], removed: [], modified: files },
    repository: {
      id: 1,
      name: repo,
      full_name: `acme/${repo}`,
      html_url: html,
      clone_url: `${html}.git`,
      ssh_url: `git@example.invalid:acme/${repo}.git`,
      url: html,
      default_branch: "main",
    },
    pusher: { name: "octocat", email: "octocat@example.invalid" },
    sender: { login: "octocat", id: 1 },
    installation: { id: INSTALLATION },
  });
}

async function deliver(ctx: TestContext, id: string, body: string, secret: string, event = "push") {
  return ctx.app.inject({
    method: "POST",
    url: `${BASE}/${id}/webhook`,
    headers: {
      "content-type": "application/json",
      "user-agent": "GitHub-Hookshot/abc",
      "x-github-event": event,
      "x-github-delivery": randomUUID(),
      "x-github-hook-id": "1",
      "x-hub-signature": "sha1=ignored",
      "x-hub-signature-256": await sign(secret, body),
    },
    payload: body,
  });
}

interface Answer {
  ignored: string | null;
  deployments: { deployment_id: string; revision_id: string | null; skipped: string | null }[];
}

forEachDatabase(
  "build on push from GitHub (signed deliveries against the stand-in)",
  (suite) => {
    let integrationId = "";
    let secret = "";
    const deployments: Record<string, string> = {};

    const call = async <T>(method: "GET" | "POST", url: string, payload?: Record<string, unknown>) => {
      const res = await suite.ctx.app.inject({
        method,
        url,
        headers: suite.ctx.headers(suite.ctx.keys.admin),
        payload,
      });
      return { status: res.statusCode, body: res.json() as T };
    };
    const latestSha = async (id: string) => {
      const d = await call<{ latest_revision_id: string }>("GET", `/v2/deployments/${id}`);
      const r = await call<{ source_revision_config: { repo_commit_sha: string | null } }>(
        "GET",
        `/v2/deployments/${id}/revisions/${d.body.latest_revision_id}`,
      );
      return r.body.source_revision_config.repo_commit_sha;
    };

    before(async () => {
      const created = await call<{ id: string; webhook_secret: string }>("POST", BASE, {
        kind: "github",
        installation_id: INSTALLATION,
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      integrationId = created.body.id;
      secret = created.body.webhook_secret;
      for (const name of ["web", "mono"]) {
        const res = await call<{ id: string }>("POST", "/v2/deployments", {
          name: `gh-${name}`,
          source: "codehost",
          source_config: {
            integration_id: integrationId,
            repo_url: `${standin.url}/acme/${name}`,
            build_on_push: true,
          },
          source_revision_config: { repo_ref: "main", framework_config_path: "slipway.json" },
        });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        deployments[name] = res.body.id;
      }
    });

    it("a GitHub push to main makes a revision pinned at `after`", async () => {
      const res = await deliver(
        suite.ctx,
        integrationId,
        githubPush("web", "refs/heads/main", SHAS.web, ["a.js"]),
        secret,
      );
      assert.equal(res.statusCode, 200, res.body);
      const answer = res.json() as Answer;
      assert.equal(answer.deployments.length, 1);
      assert.equal(answer.deployments[0]?.deployment_id, deployments.web);
      assert.equal(await latestSha(deployments.web ?? ""), SHAS.web);
    });

    it("watch_paths are read at the pushed commit through the contents API", async () => {
      const before = standin.requests.length;
      const skip = await deliver(
        suite.ctx,
        integrationId,
        githubPush("mono", "refs/heads/main", SHAS.docsOnly, ["docs/a.md"]),
        secret,
      );
      assert.match((skip.json() as Answer).deployments[0]?.skipped ?? "", /watch_paths/);
      assert.ok(
        standin.requests
          .slice(before)
          .some((r) => r.path === "/repos/acme/mono/contents/slipway.json" && r.query.ref === SHAS.docsOnly),
      );
      assert.notEqual(await latestSha(deployments.mono ?? ""), SHAS.docsOnly);
      const build = await deliver(
        suite.ctx,
        integrationId,
        githubPush("mono", "refs/heads/main", SHAS.apiChange, ["api/x.js"]),
        secret,
      );
      assert.notEqual((build.json() as Answer).deployments[0]?.revision_id, null);
      assert.equal(await latestSha(deployments.mono ?? ""), SHAS.apiChange);
    });

    it("a tag push is ignored and a mis-signed delivery is refused", async () => {
      const tag = await deliver(
        suite.ctx,
        integrationId,
        githubPush("web", "refs/tags/v2", sha(), ["a.js"]),
        secret,
      );
      assert.match((tag.json() as Answer).ignored ?? "", /tags/);
      const bad = await deliver(
        suite.ctx,
        integrationId,
        githubPush("web", "refs/heads/main", sha(), ["a.js"]),
        "nope",
      );
      assert.equal(bad.statusCode, 401);
      assert.equal(await latestSha(deployments.web ?? ""), SHAS.web);
    });
  },
  {
    env: {
      SLIPWAY_GITHUB_APP_ID: APP_ID,
      SLIPWAY_GITHUB_PRIVATE_KEY: keys.privateKey.replace(/\n/g, "\\n"),
      SLIPWAY_GITHUB_API_URL: standin.url,
    },
  },
);
