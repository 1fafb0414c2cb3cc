import assert from "node:assert/strict";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import { rows } from "../../src/db/client.ts";
import type { Reconciler } from "../../src/reconciler/reconciler.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import {
  deploymentRow,
  insertDeployment,
  interrupt,
  logLines,
  makeReconciler,
  queueRevision,
  requestDelete,
  revisionRow,
  until,
} from "../helpers/reconciler.ts";
import { ScriptedRuntime } from "../helpers/scripted-runtime.ts";
import { waitForRevision } from "../helpers/wait.ts";

const HAPPY = ["QUEUED", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"];

async function withReconciler(
  ctx: TestContext,
  runtime: ScriptedRuntime,
  fn: (r: Reconciler) => Promise<void>,
  opts: Parameters<typeof makeReconciler>[2] = {},
): Promise<void> {
  const r = makeReconciler(ctx, runtime, opts);
  await r.start();
  try {
    await fn(r);
  } finally {
    await r.stop();
  }
}

const history = async (ctx: TestContext, id: string) =>
  (await revisionRow(ctx, id)).status_history.map((h) => h.status);

forEachDatabase("reconciler loop", (suite) => {
  it("drives a queued revision to DEPLOYED along the transitions table, with secrets only in env", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dep = await insertDeployment(ctx, { name: "happy" });
    assert.equal((await deploymentRow(ctx, dep))?.status, "AWAITING_DATABASE");
    const rev = await queueRevision(ctx, dep, { secrets: { API_TOKEN: "s3cr3t-token-value" } });
    await withReconciler(ctx, runtime, async () => {
      assert.equal(await waitForRevision(ctx.db, rev, { timeoutMs: 60_000 }), "DEPLOYED");
    });
    const row = await revisionRow(ctx, rev);
    assert.deepEqual(
      row.status_history.map((h) => h.status),
      HAPPY,
    );
    for (const h of row.status_history) assert.ok(!Number.isNaN(Date.parse(h.at)), "each entry has a time");
    assert.equal(row.source_revision_config.repo_commit_sha, "0123456789abcdef0123456789abcdef01234567");
    assert.equal(row.lease_owner, null, "a terminal revision holds no lease");
    const d = await deploymentRow(ctx, dep);
    assert.equal(d?.status, "READY");
    assert.equal(d?.active_revision_id, rev);
    assert.equal(d?.source_config.custom_url, "http://happy.localhost:8081");
    assert.equal(runtime.specs.get(rev)?.env.API_TOKEN, "s3cr3t-token-value");
    assert.equal(runtime.specs.get(rev)?.env.DATABASE_URI, undefined, "no apps database configured");
    assert.deepEqual(
      runtime.calls.filter((c) => c.revisionId === rev).map((c) => c.phase),
      ["prepare", "build", "activate"],
    );
    const lines = await logLines(ctx, rev);
    assert.ok(lines.includes("env API_TOKEN=[redacted]"), lines.join("\n"));
    assert.ok(!lines.some((l) => l.includes("s3cr3t-token-value")), "the secret is never stored in logs");
  });

  it("marks revisions of the install's first organization trusted, and no other organization's", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const mine = await queueRevision(ctx, await insertDeployment(ctx));
    const other = ctx.other;
    const theirs = await queueRevision(ctx, await insertDeployment(ctx, { tenant: other }));
    await withReconciler(ctx, runtime, async () => {
      assert.equal(await waitForRevision(ctx.db, mine, { timeoutMs: 60_000 }), "DEPLOYED");
      assert.equal(await waitForRevision(ctx.db, theirs, { timeoutMs: 60_000 }), "DEPLOYED");
    });
    assert.equal(runtime.specs.get(mine)?.trusted, true);
    assert.equal(runtime.specs.get(theirs)?.trusted, false);
  });

  it("maps runtime failures to CREATE_FAILED / BUILD_FAILED / DEPLOY_FAILED; the active revision stays", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dep = await insertDeployment(ctx);
    await withReconciler(ctx, runtime, async () => {
      const good = await queueRevision(ctx, dep);
      assert.equal(await waitForRevision(ctx.db, good), "DEPLOYED");
      const cases = [
        ["prepare", "source", "CREATE_FAILED", "build"],
        ["build", "build", "BUILD_FAILED", "build"],
        ["activate", "deploy", "DEPLOY_FAILED", "deploy"],
      ] as const;
      for (const [phase, error, expected, stream] of cases) {
        const tag = `fail-${phase}`;
        runtime.on(tag, phase, { kind: "fail", error, message: `${phase} went wrong` });
        const bad = await queueRevision(ctx, dep, { tag });
        assert.equal(await waitForRevision(ctx.db, bad), expected);
        const row = await revisionRow(ctx, bad);
        assert.equal(row.status_message, `${phase} went wrong`);
        assert.equal(row.status_history.at(-1)?.status, expected);
        assert.equal(
          (await deploymentRow(ctx, dep))?.active_revision_id,
          good,
          "a failed revision never replaces",
        );
        assert.equal((await deploymentRow(ctx, dep))?.status, "READY");
        assert.ok(runtime.count("discard", bad) >= 1, "a failed revision's files are discarded");
        const lines = await logLines(ctx, bad, stream);
        assert.ok(
          lines.some((l) => l.includes(`${expected}: ${phase} went wrong`)),
          lines.join("\n"),
        );
      }
      assert.equal(runtime.serving.get(dep), good);
    });
  });

  it("interrupt stops a build in progress: INTERRUPTED, runtime aborted, files discarded, lease released", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dep = await insertDeployment(ctx);
    await withReconciler(ctx, runtime, async () => {
      const good = await queueRevision(ctx, dep);
      assert.equal(await waitForRevision(ctx.db, good), "DEPLOYED");
      runtime.on("slow", "build", { kind: "block" });
      const rev = await queueRevision(ctx, dep, { tag: "slow" });
      await runtime.reached("slow", "build");
      assert.equal((await revisionRow(ctx, rev)).status, "BUILDING");
      await interrupt(ctx, rev);
      await until("the worker to let go", async () => (await revisionRow(ctx, rev)).lease_owner === null);
      assert.ok(runtime.count("discard", rev) >= 1);
      assert.equal(runtime.count("activate", rev), 0, "an interrupted build never deploys");
      assert.equal((await deploymentRow(ctx, dep))?.active_revision_id, good);
      assert.deepEqual(await history(ctx, rev), ["QUEUED", "AWAITING_BUILD", "BUILDING", "INTERRUPTED"]);
      assert.ok((await logLines(ctx, rev)).some((l) => l.includes("stopped (INTERRUPTED)")));
    });
  });

  it("interrupt during the switch puts the previous revision back", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dep = await insertDeployment(ctx);
    await withReconciler(ctx, runtime, async () => {
      const good = await queueRevision(ctx, dep);
      assert.equal(await waitForRevision(ctx.db, good), "DEPLOYED");
      // The runtime finishes the switch although the interrupt came in during it.
      runtime.on("switch", "activate", { kind: "block", ignoreAbort: true });
      const rev = await queueRevision(ctx, dep, { tag: "switch" });
      await runtime.reached("switch", "activate");
      await interrupt(ctx, rev);
      runtime.release("switch", "activate");
      await until("the worker to let go", async () => (await revisionRow(ctx, rev)).lease_owner === null);
      assert.equal((await revisionRow(ctx, rev)).status, "INTERRUPTED");
      assert.equal((await deploymentRow(ctx, dep))?.active_revision_id, good);
      await until("the old revision to serve again", async () => runtime.serving.get(dep) === good);
      assert.equal(runtime.count("activate", good), 2);
    });
  });

  it("coalesces: a revision not yet building when a newer one waits is SKIPPED; the newest deploys", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dep = await insertDeployment(ctx);
    runtime.on("first", "build", { kind: "block" });
    await withReconciler(ctx, runtime, async () => {
      const first = await queueRevision(ctx, dep, { tag: "first" });
      await runtime.reached("first", "build");
      // Two queued behind a build in progress, as a race with the API could leave them.
      const second = await queueRevision(ctx, dep, { tag: "second", skipOlder: false });
      const third = await queueRevision(ctx, dep, { tag: "third", skipOlder: false });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal((await revisionRow(ctx, second)).status, "QUEUED", "waits for the older revision");
      assert.equal(runtime.count("prepare", second), 0);
      runtime.release("first", "build");
      assert.equal(await waitForRevision(ctx.db, first), "DEPLOYED");
      assert.equal(await waitForRevision(ctx.db, second), "SKIPPED");
      assert.equal(await waitForRevision(ctx.db, third), "DEPLOYED");
      assert.equal(runtime.count("prepare", second), 0, "a skipped revision is never fetched");
      assert.deepEqual(await history(ctx, second), ["QUEUED", "AWAITING_BUILD", "SKIPPED"]);
      assert.equal((await deploymentRow(ctx, dep))?.active_revision_id, third);
      // The superseded revision's files go right after the switch.
      await until("the old build to be removed", async () => runtime.count("discard", first) >= 1);
    });
  });

  it("resumes a revision whose worker died, from prepare, after its lease expired", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dep = await insertDeployment(ctx);
    const rev = await queueRevision(ctx, dep, {
      status: "BUILDING",
      lease: { owner: "dead-worker", expiredMsAgo: 1 },
    });
    const alive = await queueRevision(ctx, await insertDeployment(ctx), {
      status: "BUILDING",
      lease: { owner: "live-worker", expiredMsAgo: -60_000 },
    });
    await withReconciler(ctx, runtime, async () => {
      assert.equal(await waitForRevision(ctx.db, rev), "DEPLOYED");
      assert.deepEqual(await history(ctx, rev), [
        "BUILDING",
        "UNKNOWN",
        "AWAITING_BUILD",
        "BUILDING",
        "AWAITING_DEPLOY",
        "DEPLOYING",
        "DEPLOYED",
      ]);
      assert.equal(runtime.count("prepare", rev), 1);
      assert.equal(runtime.count("prepare", alive), 0, "a live lease is never taken over");
      assert.equal((await revisionRow(ctx, alive)).lease_owner, "live-worker");
    });
  });

  it("a fault is UNKNOWN and retried; repeated faults end in the phase's failure", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dep = await insertDeployment(ctx);
    runtime.on("flaky", "build", { kind: "fail", error: "fault", message: "disk hiccup" });
    await withReconciler(ctx, runtime, async () => {
      const rev = await queueRevision(ctx, dep, { tag: "flaky" });
      assert.equal(await waitForRevision(ctx.db, rev), "DEPLOYED");
      const h = await history(ctx, rev);
      assert.deepEqual(h.slice(0, 4), ["QUEUED", "AWAITING_BUILD", "BUILDING", "UNKNOWN"]);
      assert.equal(h.at(-1), "DEPLOYED");
      assert.equal(runtime.count("build", rev), 2);
    });
    const broken = new ScriptedRuntime();
    broken.build = async () => {
      throw new Error("always broken");
    };
    await withReconciler(ctx, broken, async () => {
      const rev = await queueRevision(ctx, dep, { tag: "broken" });
      assert.equal(await waitForRevision(ctx.db, rev, { timeoutMs: 60_000 }), "BUILD_FAILED");
      assert.match(
        (await revisionRow(ctx, rev)).status_message ?? "",
        /gave up after 3 faults: always broken/,
      );
    });
  });

  it("a secret that cannot be decrypted is a fault: retried, then CREATE_FAILED, never a crash", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dep = await insertDeployment(ctx);
    const rev = await queueRevision(ctx, dep, { secrets: { TOKEN: "value" }, status: "CREATING" });
    // Bound to another row: authentication fails on decrypt.
    await ctx.db.orm.execute(
      sql`UPDATE revision_secrets SET value_enc = ${ctx.keyring.encrypt("value", "revision_secrets.value_enc:elsewhere")}
           WHERE revision_id = ${rev}`,
    );
    await ctx.db.orm.execute(sql`UPDATE revisions SET status = 'QUEUED' WHERE id = ${rev}`);
    await withReconciler(ctx, runtime, async () => {
      assert.equal(await waitForRevision(ctx.db, rev, { timeoutMs: 60_000 }), "CREATE_FAILED");
    });
    assert.match((await revisionRow(ctx, rev)).status_message ?? "", /gave up after 3 faults/);
    assert.equal(runtime.count("prepare", rev), 0);
  });

  it("two reconcilers on one database never work on the same revision", async () => {
    const ctx = suite.ctx;
    const a = new ScriptedRuntime();
    const b = new ScriptedRuntime();
    const revs: string[] = [];
    const ra = makeReconciler(ctx, a, { workerId: "worker-a" });
    const rb = makeReconciler(ctx, b, { workerId: "worker-b" });
    await Promise.all([ra.start(), rb.start()]);
    try {
      for (let i = 0; i < 8; i++) revs.push(await queueRevision(ctx, await insertDeployment(ctx)));
      for (const rev of revs) assert.equal(await waitForRevision(ctx.db, rev), "DEPLOYED");
    } finally {
      await Promise.all([ra.stop(), rb.stop()]);
    }
    for (const rev of revs) {
      assert.equal(a.count("prepare", rev) + b.count("prepare", rev), 1, `revision ${rev} prepared once`);
      assert.deepEqual(await history(ctx, rev), HAPPY);
    }
  });

  it("tears a deployment down on AWAITING_DELETE: revisions stopped, runtime torn down, row removed", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dep = await insertDeployment(ctx);
    await withReconciler(ctx, runtime, async () => {
      const good = await queueRevision(ctx, dep);
      assert.equal(await waitForRevision(ctx.db, good), "DEPLOYED");
      runtime.on("busy", "build", { kind: "block" });
      const busy = await queueRevision(ctx, dep, { tag: "busy" });
      await runtime.reached("busy", "build");
      await requestDelete(ctx, dep);
      await until("the row to go", async () => (await deploymentRow(ctx, dep)) === undefined);
      assert.ok(runtime.count("teardown") >= 1);
      assert.equal(runtime.serving.has(dep), false);
      const left = await rows<{ n: number }>(
        ctx.db.orm,
        sql`SELECT count(*)::int AS n FROM revisions WHERE id IN (${good}, ${busy})`,
      );
      assert.equal(left[0]?.n, 0);
    });
  });

  it("processes that run the same deployment follow each other's deploys and deletion", async () => {
    const ctx = suite.ctx;
    const a = new ScriptedRuntime();
    const b = new ScriptedRuntime();
    const dep = await insertDeployment(ctx);
    const ra = makeReconciler(ctx, a, { workerId: "worker-a" });
    await ra.start();
    const rb = makeReconciler(ctx, b, { workerId: "worker-b" });
    try {
      const rev = await queueRevision(ctx, dep);
      assert.equal(await waitForRevision(ctx.db, rev), "DEPLOYED");
      // The second process starts later and runs the active revision too.
      await rb.start();
      await rb.ready;
      assert.equal(a.serving.get(dep), rev);
      assert.equal(b.serving.get(dep), rev);
      // A new revision, deployed by whichever process claims it, is switched to by the other too.
      const next = await queueRevision(ctx, dep);
      assert.equal(await waitForRevision(ctx.db, next), "DEPLOYED");
      await until(
        "both processes to run it",
        async () => a.serving.get(dep) === next && b.serving.get(dep) === next,
      );
      assert.deepEqual(await history(ctx, next), HAPPY, "following is not a status change");
      await requestDelete(ctx, dep);
      await until("the row to go", async () => (await deploymentRow(ctx, dep)) === undefined);
      await until("both processes to stop it", async () => !a.serving.has(dep) && !b.serving.has(dep));
    } finally {
      await Promise.all([ra.stop(), rb.stop()]);
    }
  });

  it("on start, brings active revisions back without a rebuild when built, with one otherwise", async () => {
    const ctx = suite.ctx;
    const first = new ScriptedRuntime();
    const depBuilt = await insertDeployment(ctx);
    const depGone = await insertDeployment(ctx);
    const revBuilt = await queueRevision(ctx, depBuilt, { secrets: { KEY: "restart-secret" } });
    const revGone = await queueRevision(ctx, depGone);
    await withReconciler(ctx, first, async () => {
      assert.equal(await waitForRevision(ctx.db, revBuilt), "DEPLOYED");
      assert.equal(await waitForRevision(ctx.db, revGone), "DEPLOYED");
    });
    // A new process: its runtime still has one build on disk, not the other.
    const second = new ScriptedRuntime();
    second.built.add(revBuilt);
    await withReconciler(ctx, second, async (r) => {
      await r.ready;
      const phases = (rev: string) => second.calls.filter((c) => c.revisionId === rev).map((c) => c.phase);
      assert.deepEqual(phases(revBuilt), ["isBuilt", "activate"]);
      assert.deepEqual(phases(revGone), ["isBuilt", "prepare", "build", "activate"]);
      assert.equal(second.serving.get(depBuilt), revBuilt);
      assert.equal(second.specs.get(revBuilt)?.env.KEY, "restart-secret");
      assert.equal((await revisionRow(ctx, revBuilt)).status, "DEPLOYED", "status is untouched");
    });
  });

  it("the leader marks a deployment UNKNOWN when its runtime cannot report, READY when it can again", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dep = await insertDeployment(ctx);
    await withReconciler(ctx, runtime, async () => {
      const rev = await queueRevision(ctx, dep);
      assert.equal(await waitForRevision(ctx.db, rev), "DEPLOYED");
      runtime.healthOf = (id) => (id === dep ? "unknown" : "stopped");
      await until("UNKNOWN", async () => (await deploymentRow(ctx, dep))?.status === "UNKNOWN");
      runtime.healthOf = (id) => (id === dep ? "running" : "stopped");
      await until("READY", async () => (await deploymentRow(ctx, dep))?.status === "READY");
    });
  });
});
