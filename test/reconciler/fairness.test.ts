import assert from "node:assert/strict";
import { afterEach, it } from "node:test";
import { sql } from "drizzle-orm";
import type { Config } from "../../src/config.ts";
import type { Reconciler } from "../../src/reconciler/reconciler.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import {
  deploymentRow,
  insertDeployment,
  interrupt,
  logLines,
  makeReconciler,
  queueRevision,
  reconcilerConfig,
  revisionRow,
  until,
} from "../helpers/reconciler.ts";
import { ScriptedRuntime } from "../helpers/scripted-runtime.ts";
import { waitForRevision } from "../helpers/wait.ts";

/** The suite's config with other tenant limits (builds per workspace, build time). */
function withLimits(ctx: TestContext, limits: Partial<Config["limits"]>): Config {
  const config = reconcilerConfig(ctx);
  return { ...config, limits: { ...config.limits, ...limits } };
}

async function running(
  ctx: TestContext,
  runtime: ScriptedRuntime,
  opts: Parameters<typeof makeReconciler>[2],
  fn: (r: Reconciler) => Promise<void>,
): Promise<void> {
  const r = makeReconciler(ctx, runtime, opts);
  await r.start();
  try {
    await fn(r);
  } finally {
    await r.stop();
  }
}

/** `runtime.reached`, failing instead of hanging when the build never starts. */
function reached(runtime: ScriptedRuntime, tag: string): Promise<void> {
  return Promise.race([
    runtime.reached(tag, "build"),
    new Promise<void>((_, reject) =>
      setTimeout(() => reject(new Error(`the build of ${tag} did not start`)), 20_000).unref(),
    ),
  ]);
}

/** Tags of the builds the runtime has started, sorted (builds claimed together start in any order). */
const started = (runtime: ScriptedRuntime, prefix: string) =>
  runtime.calls
    .filter((c) => c.phase === "build" && c.tag?.startsWith(prefix))
    .map((c) => c.tag)
    .sort();

/** Queues `n` revisions in a workspace, each of its own deployment, tagged `<prefix><i>`. */
async function queueMany(
  ctx: TestContext,
  tenant: { orgId: string; workspaceId: string },
  prefix: string,
  n: number,
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push(await queueRevision(ctx, await insertDeployment(ctx, { tenant }), { tag: `${prefix}${i}` }));
  }
  return ids;
}

forEachDatabase("reconciler: builds fair between tenants, and their time limit", (suite) => {
  afterEach(async () => {
    // Whatever a failed test left in progress must not be claimed by the next one.
    await suite.ctx.db.orm.execute(
      sql`UPDATE revisions SET status = 'INTERRUPTED', lease_owner = NULL, lease_expires_at = NULL
           WHERE status IN ('QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'UNKNOWN')`,
    );
  });

  it("eight slow builds of one workspace do not hold another workspace's deploy", async (t) => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    for (let i = 0; i < 8; i++) runtime.on(`slow-${i}`, "build", { kind: "block" });
    const mine = { orgId: ctx.orgId, workspaceId: ctx.workspaceId };
    const slow = await queueMany(ctx, mine, "slow-", 8);
    const config = withLimits(ctx, { buildsPerWorkspace: 2 });
    await running(ctx, runtime, { config, concurrency: 4 }, async () => {
      await reached(runtime, "slow-0");
      await reached(runtime, "slow-1");
      const queuedAt = Date.now();
      const quick = await queueRevision(ctx, await insertDeployment(ctx, { tenant: ctx.other }), {
        tag: "quick",
      });
      assert.equal(await waitForRevision(ctx.db, quick, { timeoutMs: 30_000 }), "DEPLOYED");
      t.diagnostic(`the other workspace's deploy took ${Date.now() - queuedAt} ms beside 8 slow builds`);
      // It ran while the slow workspace still had six builds waiting, two at a time.
      assert.deepEqual(started(runtime, "slow-"), ["slow-0", "slow-1"]);

      // The slow workspace's builds go on two at a time, oldest first.
      for (let i = 0; i < 8; i++) {
        runtime.release(`slow-${i}`, "build");
        if (i + 2 < 8) await reached(runtime, `slow-${i + 2}`);
        else await waitForRevision(ctx.db, slow[i] ?? "", { timeoutMs: 30_000 });
        const now = started(runtime, "slow-");
        assert.deepEqual(
          now,
          Array.from({ length: Math.min(i + 3, 8) }, (_, k) => `slow-${k}`),
          `after releasing slow-${i}`,
        );
      }
      for (const id of slow)
        assert.equal(await waitForRevision(ctx.db, id, { timeoutMs: 30_000 }), "DEPLOYED");
    });
  });

  it("gives the next free slot to another workspace's build, not to the busy one's backlog", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    for (let i = 0; i < 8; i++) runtime.on(`busy-${i}`, "build", { kind: "block" });
    runtime.on("other-0", "build", { kind: "block" });
    const mine = { orgId: ctx.orgId, workspaceId: ctx.workspaceId };
    await queueMany(ctx, mine, "busy-", 8);
    // Two workers in all, both taken by the busy workspace.
    const config = withLimits(ctx, { buildsPerWorkspace: 2 });
    await running(ctx, runtime, { config, concurrency: 2 }, async () => {
      await reached(runtime, "busy-0");
      await reached(runtime, "busy-1");
      const [other] = await queueMany(ctx, { orgId: ctx.orgId, workspaceId: ctx.workspace2Id }, "other-", 1);
      runtime.release("busy-0", "build");
      await reached(runtime, "other-0");
      assert.deepEqual(started(runtime, "busy-"), ["busy-0", "busy-1"], "busy-2 waits its turn");
      runtime.release("other-0", "build");
      assert.equal(await waitForRevision(ctx.db, other ?? "", { timeoutMs: 30_000 }), "DEPLOYED");
      await reached(runtime, "busy-2");
      for (let i = 1; i < 8; i++) runtime.release(`busy-${i}`, "build");
    });
  });

  it("fails a build past its time limit with the reason; the active revision keeps serving", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    runtime.on("too-long", "build", { kind: "block" });
    const config = withLimits(ctx, { buildTimeoutMs: 1000 });
    const dep = await insertDeployment(ctx);
    await running(ctx, runtime, { config }, async () => {
      const first = await queueRevision(ctx, dep, { tag: "fine" });
      assert.equal(await waitForRevision(ctx.db, first, { timeoutMs: 30_000 }), "DEPLOYED");
      const second = await queueRevision(ctx, dep, { tag: "too-long" });
      assert.equal(await waitForRevision(ctx.db, second, { timeoutMs: 30_000 }), "BUILD_FAILED");
      const row = await revisionRow(ctx, second);
      assert.equal(row.status_message, "the build took longer than 1 s (SLIPWAY_BUILD_TIMEOUT_S)");
      assert.equal(row.lease_owner, null);
      const log = await logLines(ctx, second, "build");
      assert.ok(
        log.includes("Slipway: the build took longer than 1 s (SLIPWAY_BUILD_TIMEOUT_S); stopping it."),
        log.join("\n"),
      );
      assert.equal((await deploymentRow(ctx, dep))?.active_revision_id, first);
      assert.equal(runtime.serving.get(dep), first, "the previous revision still runs");
      assert.ok(runtime.count("discard", second) >= 1, "the failed build's files are removed");
      // The deployment is not stuck: its next revision builds and deploys.
      const third = await queueRevision(ctx, dep, { tag: "fine-again" });
      assert.equal(await waitForRevision(ctx.db, third, { timeoutMs: 30_000 }), "DEPLOYED");
    });
  });

  it("an interrupt during a build is still INTERRUPTED, not a timeout", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    runtime.on("stopped", "build", { kind: "block" });
    const config = withLimits(ctx, { buildTimeoutMs: 60_000 });
    await running(ctx, runtime, { config }, async () => {
      const rev = await queueRevision(ctx, await insertDeployment(ctx), { tag: "stopped" });
      await reached(runtime, "stopped");
      await interrupt(ctx, rev);
      await until("the lease is given back", async () => (await revisionRow(ctx, rev)).lease_owner === null);
      const row = await revisionRow(ctx, rev);
      assert.equal(row.status, "INTERRUPTED");
      assert.ok(!(await logLines(ctx, rev)).some((l) => l.includes("SLIPWAY_BUILD_TIMEOUT_S")));
    });
  });
});
