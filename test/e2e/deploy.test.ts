import assert from "node:assert/strict";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, it } from "node:test";
import { AppDatabases } from "../../src/reconciler/app-database.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { TEST_DATABASE_URL } from "../helpers/databases.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { appGet, createDeployed, type Deployed, e2eEnv, freePort, gitRoot, loopRequests } from "./stack.ts";

const git = gitRoot();
const appsPort = await freePort();

forEachDatabase(
  "end to end: deploying codehost revisions on the local runtime",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let s: Deployed;
    after(async () => {
      await stack?.stop();
      // The deployment is kept to the end, so its database is dropped here.
      if (s) await new AppDatabases(TEST_DATABASE_URL, suite.ctx.keyring).drop(s.dep.id);
    });
    const settle = (rid: string) => waitForRevision(suite.ctx.db, rid, { timeoutMs: 60_000 });
    const latest = async () => {
      const d = await s.api.deployment(s.dep.id);
      assert.ok(d.latest_revision_id);
      return d.latest_revision_id;
    };

    it("a codehost deployment reaches DEPLOYED and the app answers at its URL with a secret from its env", async () => {
      const ctx = suite.ctx;
      stack = await startReconciler(ctx, ctx.app.log);
      s = await createDeployed(ctx, git.team, `hello-${kind}`, settle);
      assert.equal(s.dep.status, "READY");
      assert.equal(s.dep.active_revision_id, s.firstRevision);
      assert.equal(new URL(s.url).hostname, `hello-${kind}.localhost`);
      const answer = await appGet(s.url);
      assert.equal(answer.status, 200);
      assert.equal(answer.body.version, "1");
      assert.equal(answer.body.greeting, "greeting-secret-value");
      assert.equal(answer.body.db, "set", "the app got DATABASE_URI for its own database");
      const rev = await s.api.revision(s.dep.id, s.firstRevision);
      assert.equal(rev.source_revision_config.repo_commit_sha, s.firstSha);
      assert.deepEqual(
        rev.status_history.map((h) => h.status),
        ["QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"],
      );
      const logs = [
        ...(await s.api.logs(s.dep.id, s.firstRevision, "build")),
        ...(await s.api.logs(s.dep.id, s.firstRevision, "deploy")),
      ];
      assert.ok(logs.length > 0);
      assert.ok(!logs.some((l) => l.includes("greeting-secret-value")), "no secret in the logs");
    });

    it("a PATCH to a new commit deploys with zero failed requests from a client looping during the switch", async () => {
      s.repo.commit({ version: "2" });
      let stop = false;
      const client = loopRequests(s.url, () => stop);
      await new Promise((r) => setTimeout(r, 100));
      await s.api.patch(s.dep.id, { source_revision_config: { repo_ref: "main" } });
      assert.equal(await settle(await latest()), "DEPLOYED");
      // Keep requesting a little after the switch, while the old revision drains and stops.
      await new Promise((r) => setTimeout(r, 500));
      stop = true;
      const { versions, failures } = await client;
      assert.deepEqual(failures, [], "no request failed during the deploy");
      assert.deepEqual(versions, ["1", "2"]);
      assert.equal((await appGet(s.url)).body.version, "2");
    });

    it("a failing install → BUILD_FAILED, and the old revision still serves", async () => {
      await s.api.patch(s.dep.id, {
        source_config: { install_command: "echo installing now; exit 7" },
        source_revision_config: { repo_ref: "main" },
      });
      const rid = await latest();
      assert.equal(await settle(rid), "BUILD_FAILED");
      assert.ok((await s.api.logs(s.dep.id, rid, "build")).some((l) => l.includes("installing now")));
      assert.equal((await appGet(s.url)).body.version, "2");
      assert.notEqual((await s.api.deployment(s.dep.id)).active_revision_id, rid);
      await s.api.patch(s.dep.id, { source_config: { install_command: "echo ok" } });
    });

    it("an app that exits, or never gets healthy → DEPLOY_FAILED with its output in the deploy log", async () => {
      s.repo.commit({ version: "3-exit", mode: "exit" }, "exits");
      await s.api.patch(s.dep.id, { source_revision_config: { repo_ref: "exits" } });
      const exits = await latest();
      assert.equal(await settle(exits), "DEPLOY_FAILED");
      assert.ok(
        (await s.api.logs(s.dep.id, exits, "deploy")).some((l) => l.includes("starting and exiting")),
      );

      s.repo.commit({ version: "3-sick", mode: "unhealthy" }, "sick");
      await s.api.patch(s.dep.id, { source_revision_config: { repo_ref: "sick" } });
      assert.equal(await settle(await latest()), "DEPLOY_FAILED");
      assert.equal((await appGet(s.url)).body.version, "2", "the active revision kept serving");
    });

    it("a deployment whose processes keep crashing is UNKNOWN, and READY again once they run", async () => {
      const d = await s.api.deployment(s.dep.id);
      assert.ok(d.active_revision_id);
      // The deployment's HOME (apps/<id>/home), where the app leaves its flag.
      const flag = join(suite.ctx.config.dataDir, "apps", s.dep.id, "home", "crash.flag");
      await appGet(s.url, "/crash");
      const status = async (want: string) => {
        const deadline = Date.now() + 30_000;
        while ((await s.api.deployment(s.dep.id)).status !== want) {
          assert.ok(Date.now() < deadline, `deployment never became ${want}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      await status("UNKNOWN");
      assert.ok(existsSync(flag));
      rmSync(flag);
      await status("READY");
      assert.equal((await appGet(s.url)).body.version, "2");
    });
  },
  { env: { ...e2eEnv(git.root, appsPort), SLIPWAY_APPS_DATABASE_URL: TEST_DATABASE_URL } },
);
