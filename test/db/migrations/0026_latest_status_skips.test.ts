import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { sql } from "drizzle-orm";
import { type Database, rows } from "../../../src/db/client.ts";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../../helpers/databases.ts";

/**
 * Migration 0026: the latest-revision-status trigger skips revisions moving to SKIPPED (never a
 * deployment's latest), and still carries every other move of the latest revision to its row.
 */
for (const kind of DB_KINDS) {
  describe(`migration 0026: the latest status trigger leaves SKIPPED moves alone [${kind}]`, () => {
    let test: TestDatabase;
    let db: Database;
    const ids = {
      org: randomUUID(),
      ws: randomUUID(),
      dep: randomUUID(),
      old: randomUUID(),
      latest: randomUUID(),
    };

    before(async () => {
      test = await createTestDatabase(kind);
      db = test.db;
      const run = (q: ReturnType<typeof sql>) => db.orm.execute(q);
      await run(sql`INSERT INTO organizations (id, name) VALUES (${ids.org}::uuid, 'm26')`);
      await run(
        sql`INSERT INTO workspaces (id, organization_id, name) VALUES (${ids.ws}::uuid, ${ids.org}::uuid, 'm26')`,
      );
      await run(sql`INSERT INTO deployments (id, organization_id, workspace_id, name, source, source_config, created_at, updated_at)
                    VALUES (${ids.dep}::uuid, ${ids.org}::uuid, ${ids.ws}::uuid, 'm26', 'internal_source', '{}'::jsonb, now(), now())`);
      for (const [id, seq] of [
        [ids.old, 1],
        [ids.latest, 2],
      ] as const) {
        await run(sql`INSERT INTO revisions (id, deployment_id, seq, status, source, source_revision_config, created_at, updated_at)
                      VALUES (${id}::uuid, ${ids.dep}::uuid, ${seq}, 'QUEUED', 'internal_source', '{}'::jsonb, now(), now())`);
      }
      await run(sql`UPDATE deployments SET latest_revision_id = ${ids.latest}::uuid, latest_revision_status = 'QUEUED'
                     WHERE id = ${ids.dep}::uuid`);
    });
    after(() => test.drop());

    it("the trigger's condition names SKIPPED", async () => {
      const [row] = await rows<{ def: string }>(
        db.orm,
        sql`SELECT pg_get_triggerdef(t.oid) AS def FROM pg_trigger t WHERE t.tgname = 'revisions_latest_status'`,
      );
      assert.match(row?.def ?? "", /'SKIPPED'/);
    });

    it("the latest revision's moves still reach the deployment; an older one's skip changes nothing", async () => {
      const status = async () =>
        (
          await rows<{ s: string }>(
            db.orm,
            sql`SELECT latest_revision_status AS s FROM deployments WHERE id = ${ids.dep}::uuid`,
          )
        )[0]?.s;
      await db.orm.execute(sql`UPDATE revisions SET status = 'SKIPPED' WHERE id = ${ids.old}::uuid`);
      assert.equal(await status(), "QUEUED");
      await db.orm.execute(sql`UPDATE revisions SET status = 'BUILDING' WHERE id = ${ids.latest}::uuid`);
      assert.equal(await status(), "BUILDING");
    });
  });
}
