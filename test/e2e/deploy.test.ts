import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, it } from "node:test";
import { type RunningReconciler, startReconciler } from "../../src/reconciler/start.ts";
import { waitForRevision } from "../../src/reconciler/wait.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { Api, type AppAnswer, AppRepo, appGet, type Deployment, freePort, gitRoot } from "./stack.ts";

const git = gitRoot();
const appsPort = await freePort();

async function loop(
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

forEachDatabase(
  "end to end: codehost deployments on the local runtime",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let api: Api;
    let repo: AppRepo;
    let integrationId: string;
    let repoUrl: string;
    let dep: Deployment;
    let firstRevision: string;
    let firstSha: string;
    let url: string;

    after(async () => {
      await stack?.stop();
    });

    const settle = async (ctx: TestContext, rid: string) =>
      waitForRevision(ctx.db, rid, { timeoutMs: 60_000 });
    const latest = async () => {
      const d = await api.deployment(dep.id);
      assert.ok(d.latest_revision_id);
      return d.latest_revision_id;
    };

    it("a codehost deployment reaches DEPLOYED and the app answers at its URL with a secret from its env", async () => {
      const ctx = suite.ctx;
      stack = await startReconciler(ctx, ctx.app.log);
      api = new Api(ctx);
      repo = new AppRepo(git.team, `app-${kind}`);
      firstSha = repo.commit({ version: "1" });
      integrationId = await api.integration(git.team);
      repoUrl = await api.repoUrl(integrationId, `app-${kind}`);
      dep = await api.createCodehost({
        name: `hello-${kind}`,
        integrationId,
        repoUrl,
        secrets: [{ name: "GREETING", value: "greeting-secret-value" }],
      });
      assert.ok(dep.latest_revision_id);
      firstRevision = dep.latest_revision_id;
      assert.equal(await settle(ctx, firstRevision), "DEPLOYED");
      const d = await api.deployment(dep.id);
      assert.equal(d.status, "READY");
      assert.equal(d.active_revision_id, firstRevision);
      assert.ok(d.source_config.custom_url);
      url = d.source_config.custom_url;
      assert.equal(new URL(url).hostname, `hello-${kind}.localhost`);
      const answer = await appGet(url);
      assert.equal(answer.status, 200);
      assert.equal(answer.body.version, "1");
      assert.equal(answer.body.greeting, "greeting-secret-value");
      const rev = await api.revision(dep.id, firstRevision);
      assert.equal(rev.source_revision_config.repo_commit_sha, firstSha);
      assert.deepEqual(
        rev.status_history.map((h) => h.status),
        ["QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"],
      );
      const logs = [
        ...(await api.logs(dep.id, firstRevision, "build")),
        ...(await api.logs(dep.id, firstRevision, "deploy")),
      ];
      assert.ok(logs.length > 0);
      assert.ok(!logs.some((l) => l.includes("greeting-secret-value")), "no secret in the logs");
    });

    it("a PATCH to a new commit deploys with zero failed requests from a client looping during the switch", async () => {
      const ctx = suite.ctx;
      repo.commit({ version: "2" });
      let stop = false;
      const client = loop(url, () => stop);
      await new Promise((r) => setTimeout(r, 100));
      await api.patch(dep.id, { source_revision_config: { repo_ref: "main" } });
      const rid = await latest();
      assert.equal(await settle(ctx, rid), "DEPLOYED");
      // Keep requesting a little after the switch, while the old revision drains and stops.
      await new Promise((r) => setTimeout(r, 500));
      stop = true;
      const { versions, failures } = await client;
      assert.deepEqual(failures, [], "no request failed during the deploy");
      assert.deepEqual(versions, ["1", "2"]);
      assert.equal((await appGet(url)).body.version, "2");
    });

    it("a failing install → BUILD_FAILED, and the old revision still serves", async () => {
      const ctx = suite.ctx;
      await api.patch(dep.id, {
        source_config: { install_command: "echo installing now; exit 7" },
        source_revision_config: { repo_ref: "main" },
      });
      const rid = await latest();
      assert.equal(await settle(ctx, rid), "BUILD_FAILED");
      assert.ok((await api.logs(dep.id, rid, "build")).some((l) => l.includes("installing now")));
      assert.equal((await appGet(url)).body.version, "2");
      assert.notEqual((await api.deployment(dep.id)).active_revision_id, rid);
      await api.patch(dep.id, { source_config: { install_command: "echo ok" } });
    });

    it("an app that exits, or never gets healthy → DEPLOY_FAILED with its output in the deploy log", async () => {
      const ctx = suite.ctx;
      repo.commit({ version: "3-exit", mode: "exit" }, "exits");
      await api.patch(dep.id, { source_revision_config: { repo_ref: "exits" } });
      const exits = await latest();
      assert.equal(await settle(ctx, exits), "DEPLOY_FAILED");
      assert.ok((await api.logs(dep.id, exits, "deploy")).some((l) => l.includes("starting and exiting")));

      repo.commit({ version: "3-sick", mode: "unhealthy" }, "sick");
      await api.patch(dep.id, { source_revision_config: { repo_ref: "sick" } });
      const sick = await latest();
      assert.equal(await settle(ctx, sick), "DEPLOY_FAILED");
      assert.equal((await appGet(url)).body.version, "2", "the active revision kept serving");
    });

    it("interrupt stops a build in progress → INTERRUPTED; the active revision keeps serving", async () => {
      const ctx = suite.ctx;
      await api.patch(dep.id, {
        source_config: { install_command: "echo waiting; sleep 60" },
        source_revision_config: { repo_ref: "main" },
      });
      const rid = await latest();
      assert.equal(
        await waitForRevision(ctx.db, rid, { until: ["BUILDING"], timeoutMs: 30_000 }),
        "BUILDING",
      );
      await api.call("POST", `/v2/deployments/${dep.id}/revisions/${rid}/interrupt`);
      assert.equal(await settle(ctx, rid), "INTERRUPTED");
      assert.equal((await appGet(url)).body.version, "2");
      await api.patch(dep.id, { source_config: { install_command: "echo ok" } });
    });

    it("redeploy of an older revision runs its pinned commit", async () => {
      const ctx = suite.ctx;
      await api.call("POST", `/v2/deployments/${dep.id}/revisions/${firstRevision}/redeploy`);
      const rid = await latest();
      assert.notEqual(rid, firstRevision);
      assert.equal(await settle(ctx, rid), "DEPLOYED");
      assert.equal((await api.revision(dep.id, rid)).source_revision_config.repo_commit_sha, firstSha);
      assert.equal((await appGet(url)).body.version, "1");
    });

    it("revisions queued behind a build are coalesced: the older waiting one is SKIPPED, the newest deploys", async () => {
      const ctx = suite.ctx;
      // The first build waits for a gate file, so the later PATCHes surely land while it builds.
      const gate = join(git.root, `gate-${kind}`);
      await api.patch(dep.id, {
        source_config: { install_command: `while [ ! -f ${gate} ]; do sleep 0.05; done` },
        source_revision_config: { repo_ref: "main" },
      });
      const building = await latest();
      assert.equal(
        await waitForRevision(ctx.db, building, { until: ["BUILDING"], timeoutMs: 30_000 }),
        "BUILDING",
      );
      await api.patch(dep.id, { source_revision_config: { repo_ref: "main" } });
      const middle = await latest();
      await api.patch(dep.id, { source_revision_config: { repo_ref: "main" } });
      const newest = await latest();
      writeFileSync(gate, "go");
      assert.equal(await settle(ctx, building), "DEPLOYED");
      assert.equal(await settle(ctx, middle), "SKIPPED");
      assert.equal(await settle(ctx, newest), "DEPLOYED");
      assert.equal((await api.deployment(dep.id)).active_revision_id, newest);
      assert.equal((await appGet(url)).body.version, "2");
    });

    it("a built-in template deploys and answers", async () => {
      const ctx = suite.ctx;
      const created = await api.call<Deployment>(
        "POST",
        "/v2/deployments",
        { name: `tpl-${kind}`, source: "internal_template", source_revision_config: { repo_ref: "hello-http" } },
        201,
      );
      assert.ok(created.latest_revision_id);
      assert.equal(await settle(ctx, created.latest_revision_id), "DEPLOYED");
      const d = await api.deployment(created.id);
      assert.ok(d.source_config.custom_url);
      const answer = await appGet(d.source_config.custom_url);
      assert.equal(answer.status, 200);
    });

    it("delete stops the app, removes its files, frees the name", async () => {
      const ctx = suite.ctx;
      const removed = await api.call<Deployment>("DELETE", `/v2/deployments/${dep.id}`);
      assert.equal(removed.status, "AWAITING_DELETE");
      const deadline = Date.now() + 30_000;
      for (;;) {
        const res = await ctx.app.inject({
          method: "GET",
          url: `/v2/deployments/${dep.id}`,
          headers: ctx.headers(ctx.keys.admin),
        });
        if (res.statusCode === 404) break;
        assert.ok(Date.now() < deadline, "deployment still there");
        await new Promise((r) => setTimeout(r, 100));
      }
      const after = await appGet(url);
      assert.notEqual(after.status, 200, "nothing serves the deleted deployment");
      assert.equal(existsSync(join(ctx.config.dataDir, "apps", dep.id)), false, "its files are gone");
      const again = await api.createCodehost({ name: `hello-${kind}`, integrationId, repoUrl });
      assert.ok(again.latest_revision_id);
      assert.equal(await settle(ctx, again.latest_revision_id), "DEPLOYED");
    });
  },
  {
    env: {
      SLIPWAY_RECONCILER: "true",
      SLIPWAY_RECONCILER_POLL_MS: "200",
      SLIPWAY_RECONCILER_LEASE_MS: "5000",
      SLIPWAY_LOCAL_GIT_ROOTS: git.root,
      SLIPWAY_APPS_PORT: String(appsPort),
      SLIPWAY_HEALTH_TIMEOUT_MS: "3000",
    },
  },
);
