import assert from "node:assert/strict";
import { it } from "node:test";
import pg from "pg";
import { emit } from "../../../src/core/events/emit.ts";
import { eventsAfter, lastEventSeq, sequenceEvents } from "../../../src/core/events/store.ts";
import { forEachDatabase } from "../../helpers/harness.ts";
import { queriesOf } from "../../helpers/statements.ts";

/**
 * Issue 13 (migration 0023): the indexes on `seq` hold sequenced rows only, so an event costs
 * fewer index entries until the sequencer numbers it. Every read of the stream still reaches its
 * rows through them: the planner may use a partial index only where the query implies its
 * predicate, which this checks on each statement the stream sends (sequential scans off, so the
 * answer does not hang on how few rows the test has).
 */
forEachDatabase("event stream: reads through the partial indexes on seq", (suite, kind) => {
  if (kind !== "postgres") return; // The statements are caught on the pg driver.
  it("the follower's reads and the sequencer's numbering each use an index on seq", async () => {
    const ctx = suite.ctx;
    for (const n of [1, 2, 3]) {
      await emit(ctx.db.orm, {
        organizationId: ctx.orgId,
        workspaceId: ctx.workspaceId,
        type: "listener.status_changed",
        data: { listener_id: `l-${n}`, status: "READY" },
      });
    }
    const queries = await queriesOf(async () => {
      await sequenceEvents(ctx.db);
      await lastEventSeq(ctx.db.orm, ctx.workspaceId);
      await eventsAfter(ctx.db.orm, ctx.workspaceId, "0", undefined, 10);
      await eventsAfter(ctx.db.orm, ctx.workspaceId, "1", ["listener.status_changed"], 10);
    });
    const reads = queries.filter((q) => /\bseq\b/.test(q.text) && !/pg_advisory/.test(q.text));
    assert.equal(reads.length, 4, reads.map((q) => q.text).join("\n"));
    const client = new pg.Client({ connectionString: ctx.dbUrl });
    await client.connect();
    try {
      await client.query("BEGIN");
      await client.query("SET LOCAL enable_seqscan = off");
      for (const q of reads) {
        const plan = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${q.text}`, q.values);
        const text = plan.rows.map((r) => r["QUERY PLAN"]).join("\n");
        assert.match(text, /events_(workspace_seq_idx|seq_key)/, `${q.text}\n${text}`);
      }
    } finally {
      await client.end();
    }
    // The stream reads what it read before.
    const events = await eventsAfter(ctx.db.orm, ctx.workspaceId, "0", undefined, 10);
    assert.equal(events.length, 3);
    assert.deepEqual(
      events.map((e) => Number(e.seq)),
      [1, 2, 3].map((i) => Number(events[0]?.seq) + i - 1),
    );
  });
});
