import assert from "node:assert/strict";
import { it } from "node:test";
import type { Reconciler } from "../../src/reconciler/reconciler.ts";
import { call, createDocker, type Deployment, type Revision } from "../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { makeReconciler, until } from "../helpers/reconciler.ts";
import { ScriptedRuntime } from "../helpers/scripted-runtime.ts";
import { waitForRevision } from "../helpers/wait.ts";

async function withReconciler(
  ctx: TestContext,
  runtime: ScriptedRuntime,
  fn: (r: Reconciler) => Promise<void>,
): Promise<void> {
  const r = makeReconciler(ctx, runtime);
  await r.start();
  try {
    await fn(r);
  } finally {
    await r.stop();
  }
}

/** A deployment made through the API; `tag` (its framework_config_path) scripts the runtime. */
async function deploymentTagged(ctx: TestContext, tag: string): Promise<Deployment> {
  return createDocker(ctx, {
    source_revision_config: { image_uri: "registry.example/app:1", framework_config_path: tag },
  });
}

const revisionOf = async (ctx: TestContext, d: Deployment) =>
  (await call<Revision>(ctx, "GET", `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`)).body;

forEachDatabase(
  "revision status_message through the API",
  (suite) => {
    it("a failing build: BUILD_FAILED with the reason alone on the revision record", async () => {
      const ctx = suite.ctx;
      const runtime = new ScriptedRuntime();
      runtime.on("npm-fails", "build", { kind: "fail", error: "build", message: "npm ci exited 1" });
      const d = await deploymentTagged(ctx, "npm-fails");
      await withReconciler(ctx, runtime, async () => {
        assert.equal(await waitForRevision(ctx.db, d.latest_revision_id as string), "BUILD_FAILED");
      });
      const rev = await revisionOf(ctx, d);
      assert.equal(rev.status, "BUILD_FAILED");
      assert.equal(rev.status_message, "npm ci exited 1");
      const dep = await call<Deployment>(ctx, "GET", `/v2/deployments/${d.id}`);
      assert.equal(
        dep.body.latest_revision_status,
        "BUILD_FAILED",
        "the reconciler's write reaches the record",
      );
      const list = await call<{ resources: Revision[] }>(ctx, "GET", `/v2/deployments/${d.id}/revisions`);
      assert.equal(list.body.resources[0]?.status_message, "npm ci exited 1");
    });

    it("a failing deploy: a multi-line reason becomes one line", async () => {
      const ctx = suite.ctx;
      const runtime = new ScriptedRuntime();
      runtime.on("unhealthy", "activate", {
        kind: "fail",
        error: "deploy",
        message: "health check /\n  timed out after 30 s\n",
      });
      const d = await deploymentTagged(ctx, "unhealthy");
      await withReconciler(ctx, runtime, async () => {
        assert.equal(await waitForRevision(ctx.db, d.latest_revision_id as string), "DEPLOY_FAILED");
      });
      assert.equal((await revisionOf(ctx, d)).status_message, "health check / timed out after 30 s");
    });

    it("a fault passes through UNKNOWN with its reason; once DEPLOYED the message is null again", async () => {
      const ctx = suite.ctx;
      const runtime = new ScriptedRuntime();
      runtime.on("hiccup", "build", { kind: "fail", error: "fault", message: "disk hiccup" });
      const d = await deploymentTagged(ctx, "hiccup");
      await withReconciler(ctx, runtime, async () => {
        assert.equal(
          await waitForRevision(ctx.db, d.latest_revision_id as string, { timeoutMs: 60_000 }),
          "DEPLOYED",
        );
      });
      const rev = await revisionOf(ctx, d);
      assert.equal(rev.status_message, null);
      const unknown = rev.status_history.find((h) => h.status === "UNKNOWN");
      assert.equal(unknown?.message, "disk hiccup", "the reason stays in the history");
    });

    it("a deployment without a revision (internal_source, nothing uploaded yet) is torn down and removed", async () => {
      const ctx = suite.ctx;
      const runtime = new ScriptedRuntime();
      const created = await call<Deployment>(ctx, "POST", "/v2/deployments", {
        name: `bare-${Date.now().toString(36)}`,
        source: "internal_source",
        source_revision_config: {},
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.latest_revision_id, null);
      await withReconciler(ctx, runtime, async () => {
        assert.equal((await call(ctx, "DELETE", `/v2/deployments/${created.body.id}`)).status, 204);
        await until("the deployment is removed", async () => {
          const res = await call(ctx, "GET", `/v2/deployments/${created.body.id}`);
          return res.status === 404;
        });
      });
      const calls = runtime.calls.filter((c) => c.deploymentId === created.body.id).map((c) => c.phase);
      assert.deepEqual(calls, ["teardown"], "nothing was ever built; the teardown ran");
    });
  },
  { env: { SLIPWAY_RECONCILER: "true" } },
);
