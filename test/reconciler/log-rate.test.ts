import assert from "node:assert/strict";
import { it } from "node:test";
import { droppedLine, LineBudget, LogSinks, RevisionLogSink } from "../../src/reconciler/log-sink.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { insertDeployment, logLines, queueRevision, until } from "../helpers/reconciler.ts";

async function newRevision(ctx: TestContext, deploymentId?: string): Promise<string> {
  return queueRevision(ctx, deploymentId ?? (await insertDeployment(ctx)), { skipOlder: false });
}

const appLines = (lines: string[]) => lines.filter((l) => l.startsWith("app "));

forEachDatabase("revision logs: lines per second of a deployment", (suite) => {
  it("stores the budget's lines, counts the rest in one dropped line, and never drops Slipway's own", async () => {
    const ctx = suite.ctx;
    const rev = await newRevision(ctx);
    const sink = new RevisionLogSink(ctx.db, rev, ["s3cret"], 5000, undefined, new LineBudget(100));
    for (let i = 0; i < 5000; i++) {
      sink.ingest("deploy", `app ${i} s3cret`);
      if (i % 1000 === 0) sink.log("deploy", `Slipway: note ${i}`);
    }
    await sink.close();
    const lines = await logLines(ctx, rev, "deploy");
    const stored = appLines(lines);
    assert.equal(stored.length, 100);
    assert.equal(stored[0], "app 0 [redacted]", "what is kept is redacted as before");
    assert.equal(stored[99], "app 99 [redacted]", "the first lines of the second are the ones kept");
    assert.deepEqual(
      lines.filter((l) => l.startsWith("Slipway: note")),
      [0, 1000, 2000, 3000, 4000].map((i) => `Slipway: note ${i}`),
    );
    assert.deepEqual(
      lines.filter((l) => l.includes("dropped")),
      ["slipway: 4900 lines dropped (over SLIPWAY_LOG_LINES_PER_S)"],
    );
  });

  it("writes the dropped line once the second is over, while the app still runs", async () => {
    const ctx = suite.ctx;
    const rev = await newRevision(ctx);
    const sink = new RevisionLogSink(ctx.db, rev, [], 5000, undefined, new LineBudget(50));
    for (let i = 0; i < 80; i++) sink.ingest("deploy", `app ${i}`);
    for (let i = 0; i < 3; i++) sink.ingest("build", `app build ${i}`);
    const note = await until("the dropped lines are reported", async () => {
      const lines = await logLines(ctx, rev);
      return lines.filter((l) => l.includes("dropped")).length === 2 ? lines : undefined;
    });
    assert.equal(appLines(note).length, 50);
    assert.deepEqual(await logLines(ctx, rev, "deploy").then((l) => l.filter((x) => x.includes("dropped"))), [
      droppedLine(30),
    ]);
    assert.deepEqual(await logLines(ctx, rev, "build").then((l) => l.filter((x) => x.includes("dropped"))), [
      "slipway: 3 lines dropped (over SLIPWAY_LOG_LINES_PER_S)",
    ]);
    // A new second has a new budget.
    sink.ingest("deploy", "app later");
    await sink.close();
    assert.ok((await logLines(ctx, rev, "deploy")).includes("app later"));
    assert.equal(droppedLine(1), "slipway: 1 line dropped (over SLIPWAY_LOG_LINES_PER_S)");
  });

  it("shares one budget between the revisions of a deployment, not between deployments", async () => {
    const ctx = suite.ctx;
    const errors: unknown[] = [];
    const sinks = new LogSinks(ctx.db, { cap: 5000, linesPerS: 100 }, (err) => errors.push(err));
    const dep = await insertDeployment(ctx);
    const old = await newRevision(ctx, dep);
    const next = await newRevision(ctx, dep);
    const otherDep = await insertDeployment(ctx);
    const other = await newRevision(ctx, otherDep);
    for (let i = 0; i < 60; i++) {
      sinks.for(old, [], dep).ingest("deploy", `app old ${i}`);
      sinks.for(next, [], dep).ingest("deploy", `app next ${i}`);
      sinks.for(other, [], otherDep).ingest("deploy", `app other ${i}`);
    }
    await sinks.closeAll();
    const both = appLines(await logLines(ctx, old)).length + appLines(await logLines(ctx, next)).length;
    assert.equal(both, 100, "a switch running two revisions does not double the budget");
    assert.equal(appLines(await logLines(ctx, other)).length, 60, "another deployment keeps its own");
    assert.deepEqual(errors, []);
  });

  it("stores a 300,000-line flood as its budget and one line per second", async () => {
    const ctx = suite.ctx;
    const rev = await newRevision(ctx);
    const sink = new RevisionLogSink(ctx.db, rev, [], 5000, undefined, new LineBudget(1000));
    for (let i = 0; i < 300_000; i++) sink.ingest("deploy", `app flood ${i}`);
    await sink.close();
    const lines = await logLines(ctx, rev, "deploy");
    assert.ok(appLines(lines).length <= 2000, `${appLines(lines).length} lines stored`);
    const notes = lines.filter((l) => l.includes("dropped"));
    const dropped = notes.reduce((n, l) => n + Number(/slipway: (\d+) lines? dropped/.exec(l)?.[1]), 0);
    assert.equal(dropped + appLines(lines).length, 300_000, "every line is stored or counted");
  });
});
