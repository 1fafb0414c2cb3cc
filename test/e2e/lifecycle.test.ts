import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import * as tar from "tar";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { waitForRevision } from "../helpers/wait.ts";
import {
  Api,
  AppRepo,
  appGet,
  createDeployed,
  type Deployed,
  type Deployment,
  e2eEnv,
  freePort,
  gitRoot,
} from "./stack.ts";

const git = gitRoot();

async function streamToBuffer(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}
const appsPort = await freePort();

forEachDatabase(
  "end to end: interrupt, redeploy, coalescing, templates, uploads and delete on the local runtime",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let api: Api;
    before(async () => {
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      api = new Api(suite.ctx);
    });
    after(async () => {
      await stack?.stop();
    });
    const settle = (rid: string) => waitForRevision(suite.ctx.db, rid, { timeoutMs: 60_000 });
    // Each test deploys its own app (version 1 of its own repository), so any test runs alone.
    const deployed = (name: string) => createDeployed(suite.ctx, git.team, `${name}-${kind}`, settle);
    const latest = async (s: Deployed) => {
      const d = await s.api.deployment(s.dep.id);
      assert.ok(d.latest_revision_id);
      return d.latest_revision_id;
    };

    it("a second version deploys over the first and serves", async () => {
      const s = await deployed("second");
      s.repo.commit({ version: "2" });
      await s.api.patch(s.dep.id, { source_revision_config: { repo_ref: "main" } });
      assert.equal(await settle(await latest(s)), "DEPLOYED");
      assert.equal((await appGet(s.url)).body.version, "2");
    });

    it("interrupt stops a build in progress → INTERRUPTED; the active revision keeps serving", async () => {
      const s = await deployed("interrupt");
      await s.api.patch(s.dep.id, {
        source_config: { install_command: "echo waiting; sleep 60" },
        source_revision_config: { repo_ref: "main" },
      });
      const rid = await latest(s);
      assert.equal(
        await waitForRevision(suite.ctx.db, rid, { until: ["BUILDING"], timeoutMs: 30_000 }),
        "BUILDING",
      );
      await s.api.call("POST", `/v2/deployments/${s.dep.id}/revisions/${rid}/interrupt`);
      assert.equal(await settle(rid), "INTERRUPTED");
      assert.equal((await s.api.deployment(s.dep.id)).active_revision_id, s.firstRevision);
      assert.equal((await appGet(s.url)).body.version, "1");
    });

    it("redeploy of an older revision runs its pinned commit", async () => {
      const s = await deployed("redeploy");
      s.repo.commit({ version: "2" });
      await s.api.patch(s.dep.id, { source_revision_config: { repo_ref: "main" } });
      assert.equal(await settle(await latest(s)), "DEPLOYED");
      assert.equal((await appGet(s.url)).body.version, "2");
      await s.api.call("POST", `/v2/deployments/${s.dep.id}/revisions/${s.firstRevision}/redeploy`);
      const rid = await latest(s);
      assert.notEqual(rid, s.firstRevision);
      assert.equal(await settle(rid), "DEPLOYED");
      assert.equal((await s.api.revision(s.dep.id, rid)).source_revision_config.repo_commit_sha, s.firstSha);
      assert.equal((await appGet(s.url)).body.version, "1");
    });

    it("revisions queued behind a build are coalesced: the older waiting one is SKIPPED, the newest deploys", async () => {
      const s = await deployed("coalesce");
      s.repo.commit({ version: "2" });
      // The first build waits for a gate file, so the later PATCHes surely land while it builds.
      // It is in the deployment's HOME: the only host directory a sandboxed build sees besides /app.
      const gate = join(suite.ctx.config.dataDir, "apps", s.dep.id, "home", `gate-${kind}`);
      await s.api.patch(s.dep.id, {
        source_config: { install_command: `while [ ! -f "$HOME/gate-${kind}" ]; do sleep 0.05; done` },
        source_revision_config: { repo_ref: "main" },
      });
      const building = await latest(s);
      assert.equal(
        await waitForRevision(suite.ctx.db, building, { until: ["BUILDING"], timeoutMs: 30_000 }),
        "BUILDING",
      );
      await s.api.patch(s.dep.id, { source_revision_config: { repo_ref: "main" } });
      const middle = await latest(s);
      await s.api.patch(s.dep.id, { source_revision_config: { repo_ref: "main" } });
      const newest = await latest(s);
      writeFileSync(gate, "go");
      assert.equal(await settle(building), "DEPLOYED");
      assert.equal(await settle(middle), "SKIPPED");
      assert.equal(await settle(newest), "DEPLOYED");
      assert.equal((await s.api.deployment(s.dep.id)).active_revision_id, newest);
      assert.equal((await appGet(s.url)).body.version, "2");
    });

    it("a built-in template deploys and answers", async () => {
      const created = await api.call<Deployment>(
        "POST",
        "/v2/deployments",
        {
          name: `tpl-${kind}`,
          source: "internal_template",
          source_revision_config: { repo_ref: "hello-http" },
        },
        201,
      );
      assert.ok(created.latest_revision_id);
      assert.equal(await settle(created.latest_revision_id), "DEPLOYED");
      const d = await api.deployment(created.id);
      assert.ok(d.source_config.custom_url);
      assert.equal((await appGet(d.source_config.custom_url)).status, 200);
    });

    it("uploaded source (internal_source) deploys from the tarball stored in the database", async () => {
      const ctx = suite.ctx;
      const created = await api.call<Deployment>(
        "POST",
        "/v2/deployments",
        {
          name: `up-${kind}`,
          source: "internal_source",
          source_revision_config: { framework_config_path: "slipway.json" },
        },
        201,
      );
      assert.equal(created.latest_revision_id, null);
      const target = await api.call<{ upload_url: string; source_tarball_path: string }>(
        "POST",
        `/v2/deployments/${created.id}/upload-url`,
      );
      const files = new AppRepo(mkdtempSync(join(tmpdir(), "slipway-upload-")), "src");
      files.commit({ version: "uploaded" });
      const archive = await streamToBuffer(
        tar.c({ gzip: true, cwd: files.dir }, ["server.js", "slipway.json"]),
      );
      const u = new URL(target.upload_url);
      const put = await ctx.app.inject({
        method: "PUT",
        url: `${u.pathname}${u.search}`,
        headers: { "content-type": "application/gzip" },
        payload: archive,
      });
      assert.equal(put.statusCode, 200, put.body);
      const patched = await api.patch(created.id, {
        source_revision_config: { source_tarball_path: target.source_tarball_path },
      });
      assert.ok(patched.latest_revision_id);
      assert.equal(await settle(patched.latest_revision_id), "DEPLOYED");
      const d = await api.deployment(created.id);
      assert.ok(d.source_config.custom_url);
      assert.equal((await appGet(d.source_config.custom_url)).body.version, "uploaded");
    });

    it("delete stops the app, removes its files, frees the name", async () => {
      const ctx = suite.ctx;
      const s = await deployed("delete");
      await s.api.call<undefined>("DELETE", `/v2/deployments/${s.dep.id}`, undefined, 204);
      // Teardown stops the app, its network namespace, container network and pids group: seconds
      // alone, but a loaded two-core CI machine has taken over 30 s.
      const deadline = Date.now() + 90_000;
      for (;;) {
        const res = await ctx.app.inject({
          method: "GET",
          url: `/v2/deployments/${s.dep.id}`,
          headers: ctx.headers(ctx.keys.admin),
        });
        if (res.statusCode === 404) break;
        assert.ok(Date.now() < deadline, "deployment still there");
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.notEqual((await appGet(s.url)).status, 200, "nothing serves the deleted deployment");
      assert.equal(existsSync(join(ctx.config.dataDir, "apps", s.dep.id)), false, "its files are gone");
      const again = await s.api.createCodehost({
        name: `delete-${kind}`,
        integrationId: s.integrationId,
        repoUrl: s.repoUrl,
      });
      assert.ok(again.latest_revision_id);
      assert.equal(await settle(again.latest_revision_id), "DEPLOYED");
    });
  },
  { env: e2eEnv(git.root, appsPort) },
);
