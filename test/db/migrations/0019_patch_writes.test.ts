import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { revisionStatusStatement } from "../../../src/core/revisions/status-store.ts";
import { type Database, rows } from "../../../src/db/client.ts";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../../helpers/databases.ts";

/**
 * Migration 0019: the skip of a deployment's older revisions uses the partial index even as a
 * prepared statement's generic plan; the event and audit logs have no foreign keys to their
 * organization and workspace, and deleting those by hand still deletes their rows.
 */
for (const kind of DB_KINDS) {
  describe(`migration 0019: PATCH writes [${kind}]`, () => {
    let test: TestDatabase;
    let db: Database;
    const ids = {
      org: randomUUID(),
      ws: randomUUID(),
      ws2: randomUUID(),
      other: randomUUID(),
      otherWs: randomUUID(),
    };

    before(async () => {
      test = await createTestDatabase(kind);
      db = test.db;
      for (const [org, ws, name] of [
        [ids.org, [ids.ws, ids.ws2], "m19"],
        [ids.other, [ids.otherWs], "m19-other"],
      ] as const) {
        await db.orm.execute(sql`INSERT INTO organizations (id, name) VALUES (${org}::uuid, ${name})`);
        for (const w of ws) {
          await db.orm.execute(
            sql`INSERT INTO workspaces (id, organization_id, name) VALUES (${w}::uuid, ${org}::uuid, ${w})`,
          );
        }
      }
      for (const [org, ws] of [
        [ids.org, ids.ws],
        [ids.org, ids.ws2],
        [ids.other, ids.otherWs],
      ] as const) {
        await db.orm.execute(sql`INSERT INTO events (id, organization_id, workspace_id, type, body)
                                 VALUES (${randomUUID()}::uuid, ${org}::uuid, ${ws}::uuid, 't', '{}')`);
        await db.orm.execute(sql`INSERT INTO audit_log (id, organization_id, workspace_id, method, route, action,
                                   resource_type, request_id)
                                 VALUES (${randomUUID()}::uuid, ${org}::uuid, ${ws}::uuid, 'PATCH', '/x', 'x.update',
                                   'x', 'r')`);
      }
    });
    after(async () => {
      await test?.drop();
    });

    const count = async (
      table: "events" | "audit_log",
      column: "workspace_id" | "organization_id",
      id: string,
    ) => {
      const [row] = await rows<{ n: number }>(
        db.orm,
        sql`SELECT count(*)::int AS n FROM ${sql.raw(table)} WHERE ${sql.raw(column)} = ${id}::uuid`,
      );
      return row?.n;
    };

    it("the skip of older revisions can use revisions_supersedable_idx in a generic plan", async () => {
      const skip = revisionStatusStatement(
        { deploymentId: randomUUID(), exceptRevisionId: randomUUID() },
        {
          from: ["QUEUED", "AWAITING_BUILD"],
          to: "SKIPPED",
          message: "Superseded.",
          at: new Date().toISOString(),
        },
      );
      assert.ok(skip);
      const { sql: text, params } = new PgDialect().sqlToQuery(skip);
      assert.match(text, /status IN \('QUEUED', 'AWAITING_BUILD'\)/);
      const literal = (v: unknown) => `'${String(v).replaceAll("'", "''")}'`;
      // As the pool runs it: prepared, then planned once for any parameters. Sequential scans
      // are off so that the plan shows which index the predicate lets the planner use at all.
      await db.exec(`PREPARE skip_older AS ${text}`);
      await db.exec("SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off");
      try {
        const plan = await rows<{ "QUERY PLAN": string }>(
          db.orm,
          sql.raw(`EXPLAIN EXECUTE skip_older(${params.map(literal).join(", ")})`),
        );
        assert.match(plan.map((p) => p["QUERY PLAN"]).join("\n"), /revisions_supersedable_idx/);
      } finally {
        await db.exec("RESET plan_cache_mode; RESET enable_seqscan; DEALLOCATE skip_older");
      }
    });

    it("events and audit_log have no foreign keys", async () => {
      const [row] = await rows<{ n: number }>(
        db.orm,
        sql`SELECT count(*)::int AS n FROM pg_constraint
             WHERE conrelid IN ('events'::regclass, 'audit_log'::regclass) AND contype = 'f'`,
      );
      assert.equal(row?.n, 0);
    });

    it("deleting a workspace deletes its events, not another workspace's", async () => {
      await db.orm.execute(sql`DELETE FROM workspaces WHERE id = ${ids.ws2}::uuid`);
      assert.equal(await count("events", "workspace_id", ids.ws2), 0);
      assert.equal(await count("events", "workspace_id", ids.ws), 1);
      // Audit records name their workspace but belong to the organization: they stay.
      assert.equal(await count("audit_log", "workspace_id", ids.ws2), 1);
    });

    it("deleting an organization deletes its events and audit records, not another's", async () => {
      await db.orm.execute(sql`DELETE FROM organizations WHERE id = ${ids.org}::uuid`);
      assert.equal(await count("events", "organization_id", ids.org), 0);
      assert.equal(await count("audit_log", "organization_id", ids.org), 0);
      assert.equal(await count("events", "organization_id", ids.other), 1);
      assert.equal(await count("audit_log", "organization_id", ids.other), 1);
    });
  });
}
