import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, it } from "node:test";
import { fileURLToPath } from "node:url";
import { sign } from "@octokit/webhooks-methods";
import { LocalGitPoller } from "../../src/resources/integrations/poller.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { Api, AppRepo, appGet, type Deployment, e2eEnv, freePort, gitRoot } from "./stack.ts";

const git = gitRoot();
const appsPort = await freePort();
const BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "bin", "slipway.mjs");
const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: "Slipway Test",
  GIT_AUTHOR_EMAIL: "test@slipway.invalid",
  GIT_COMMITTER_NAME: "Slipway Test",
  GIT_COMMITTER_EMAIL: "test@slipway.invalid",
};

/** Runs git and returns stdout and stderr (a push's `remote:` lines are on stderr). */
function run(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    env: GIT_ENV,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}
/** Pushes without blocking: the hook calls this process's server while git waits for it. */
function pushWithOutput(cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      ["push", "-q", "origin", "main"],
      { cwd, env: GIT_ENV, encoding: "utf8" },
      (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(`${stdout}${stderr}`),
    );
  });
}

forEachDatabase(
  "end to end: build on push (signed webhook, post-receive hook, poller) on the local runtime",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let poller: LocalGitPoller | undefined;
    const work = mkdtempSync(join(tmpdir(), "slipway-push-work-"));
    after(async () => {
      await poller?.stop();
      await stack?.stop();
      rmSync(work, { recursive: true, force: true });
    });

    const name = `pushed-${kind}`;
    const bare = join(git.team, `${name}.git`);
    let repo: AppRepo;
    let api: Api;
    let dep: Deployment;
    let integrationId = "";
    let secret = "";
    let url = "";
    let serverUrl = "";

    const settleLatest = async (sha: string) => {
      const d = await api.deployment(dep.id);
      assert.ok(d.latest_revision_id);
      assert.equal(
        await waitForRevision(suite.ctx.db, d.latest_revision_id, { timeoutMs: 90_000 }),
        "DEPLOYED",
      );
      const rev = await api.revision(dep.id, d.latest_revision_id);
      assert.equal(rev.source_revision_config.repo_commit_sha, sha);
      return d.latest_revision_id;
    };

    it("a build_on_push deployment of a bare repository deploys", async () => {
      const ctx = suite.ctx;
      serverUrl = await ctx.app.listen({ port: 0, host: "127.0.0.1" });
      stack = await startReconciler(ctx, ctx.app.log);
      api = new Api(ctx);
      repo = new AppRepo(work, "site");
      repo.commit({ version: "1" });
      run(git.team, "init", "-q", "--bare", "-b", "main", bare);
      run(repo.dir, "remote", "add", "origin", bare);
      run(repo.dir, "push", "-q", "origin", "main");
      const created = await api.call<{ id: string; webhook_secret: string }>(
        "POST",
        "/v1/integrations/forge/codehost",
        { kind: "local_git", path: git.team },
        201,
      );
      integrationId = created.id;
      secret = created.webhook_secret;
      const repoUrl = await api.repoUrl(integrationId, `${name}.git`);
      dep = await api.call<Deployment>(
        "POST",
        "/v2/deployments",
        {
          name,
          source: "codehost",
          source_config: { integration_id: integrationId, repo_url: repoUrl, build_on_push: true },
          source_revision_config: { repo_ref: "main", framework_config_path: "slipway.json" },
        },
        201,
      );
      assert.ok(dep.latest_revision_id);
      assert.equal(await waitForRevision(ctx.db, dep.latest_revision_id, { timeoutMs: 90_000 }), "DEPLOYED");
      dep = await api.deployment(dep.id);
      url = dep.source_config.custom_url ?? "";
      assert.equal((await appGet(url)).body.version, "1");
    });

    it("a signed push webhook deploys the pushed commit, which then serves", async () => {
      const sha = repo.commit({ version: "2" });
      run(repo.dir, "push", "-q", "origin", "main");
      const body = JSON.stringify({
        ref: "refs/heads/main",
        after: sha,
        repository: { html_url: (await api.repoUrl(integrationId, `${name}.git`)).replace(/\.git$/, "") },
        commits: [{ id: sha, added: [], removed: [], modified: ["server.js"] }],
      });
      const res = await suite.ctx.app.inject({
        method: "POST",
        url: `/v1/integrations/forge/codehost/${integrationId}/webhook`,
        headers: {
          "content-type": "application/json",
          "x-github-event": "push",
          "x-github-delivery": randomUUID(),
          "x-hub-signature-256": await sign(secret, body),
        },
        payload: body,
      });
      assert.equal(res.statusCode, 200, res.body);
      const answer = res.json() as { deployments: { deployment_id: string; revision_id: string | null }[] };
      assert.equal(answer.deployments[0]?.deployment_id, dep.id);
      const rid = await settleLatest(sha);
      assert.equal(answer.deployments[0]?.revision_id, rid);
      assert.equal((await appGet(url)).body.version, "2");
    });

    it("a real git push runs the post-receive hook, which sends a signed push: the commit deploys", async () => {
      const secretFile = join(work, "hook-secret");
      writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
      const hook = join(bare, "hooks", "post-receive");
      writeFileSync(
        hook,
        `#!/bin/sh\nexec "${process.execPath}" "${BIN}" hook post-receive --url "${serverUrl}" --integration ${integrationId} --secret-file "${secretFile}"\n`,
      );
      chmodSync(hook, 0o755);
      const sha = repo.commit({ version: "3" });
      const out = await pushWithOutput(repo.dir);
      assert.match(out, new RegExp(`remote: slipway: ${name}: building revision`), out);
      await settleLatest(sha);
      assert.equal((await appGet(url)).body.version, "3");
      rmSync(hook);
    });

    it("without the hook, the poller notices the push and deploys it", async () => {
      const ctx = suite.ctx;
      poller = new LocalGitPoller({
        db: ctx.db,
        keyring: ctx.keyring,
        config: ctx.config,
        intervalMs: 200,
        log: ctx.app.log,
      });
      await poller.pass(); // records the heads as they are now
      poller.start();
      const sha = repo.commit({ version: "4" });
      run(repo.dir, "push", "-q", "origin", "main");
      const deadline = Date.now() + 30_000;
      for (;;) {
        const d = await api.deployment(dep.id);
        const rev = d.latest_revision_id ? await api.revision(dep.id, d.latest_revision_id) : undefined;
        if (rev?.source_revision_config.repo_commit_sha === sha) break;
        assert.ok(Date.now() < deadline, "the poller never made a revision for the push");
        await new Promise((r) => setTimeout(r, 100));
      }
      await settleLatest(sha);
      assert.equal((await appGet(url)).body.version, "4");
    });
  },
  { env: e2eEnv(git.root, appsPort) },
);
