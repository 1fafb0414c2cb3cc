import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { sql } from "drizzle-orm";
import { type Database, rows } from "../../../src/db/client.ts";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../../helpers/databases.ts";

/**
 * Migration 0020: revisions keep one index on (deployment_id, seq), the unique constraint's, and a
 * deployment's revisions newest first are still read from it, not sorted.
 */
for (const kind of DB_KINDS) {
  describe(`migration 0020: one index for a deployment's revisions [${kind}]`, () => {
    let test: TestDatabase;
    let db: Database;

    before(async () => {
      test = await createTestDatabase(kind);
      db = test.db;
    });
    after(async () => {
      await test?.drop();
    });

    it("revisions_list_idx is gone; the unique constraint's index stays", async () => {
      const names = await rows<{ indexname: string }>(
        db.orm,
        sql`SELECT indexname FROM pg_indexes WHERE tablename = 'revisions' ORDER BY indexname`,
      );
      const list = names.map((n) => n.indexname);
      assert.ok(!list.includes("revisions_list_idx"), list.join(", "));
      assert.ok(list.includes("revisions_deployment_seq_key"), list.join(", "));
    });

    it("a deployment's revisions, newest first, are a backward scan of that index with no sort", async () => {
      // Sequential scans off, so that the plan shows which index the query can use at all.
      await db.exec("SET enable_seqscan = off");
      try {
        const plan = await rows<{ "QUERY PLAN": string }>(
          db.orm,
          sql`EXPLAIN SELECT r.record FROM revisions r
               WHERE r.deployment_id = ${randomUUID()}::uuid ORDER BY r.seq DESC LIMIT 20`,
        );
        const text = plan.map((p) => p["QUERY PLAN"]).join("\n");
        assert.match(text, /Index Scan Backward using revisions_deployment_seq_key/);
        assert.doesNotMatch(text, /Sort/);
      } finally {
        await db.exec("RESET enable_seqscan");
      }
    });
  });
}
