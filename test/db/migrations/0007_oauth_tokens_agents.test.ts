import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { sql } from "drizzle-orm";
import { type Database, rows } from "../../../src/db/client.ts";
import { listMigrations, migrate } from "../../../src/db/migrate.ts";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../../helpers/databases.ts";

/** Migration 0007 on a database that already holds tokens (one per user, as before it). */
for (const kind of DB_KINDS) {
  describe(`migration 0007 keeps existing tokens usable [${kind}]`, () => {
    let test: TestDatabase;
    let db: Database;
    const ids = { org: randomUUID(), provider: randomUUID(), a: randomUUID(), b: randomUUID() };

    before(async () => {
      test = await createTestDatabase(kind);
      db = test.db;
      // A fresh database at the state before 0007: drop what it added, then re-apply it below.
      await db.orm.execute(sql`DROP TABLE agent_connections`);
      await db.orm.execute(sql`ALTER TABLE oauth_flows DROP COLUMN target_token_ref, DROP COLUMN make_default,
                                 DROP COLUMN workspace_id`);
      await db.orm.execute(sql`DROP INDEX oauth_tokens_default_key`);
      await db.orm.execute(sql`DROP INDEX oauth_tokens_subject_idx`);
      await db.orm.execute(sql`DROP INDEX oauth_tokens_workspace_idx`);
      await db.orm.execute(sql`ALTER TABLE oauth_tokens DROP COLUMN is_default, DROP COLUMN provider_account_label,
                                 DROP COLUMN workspace_id`);
      await db.orm.execute(sql`ALTER TABLE oauth_tokens ADD CONSTRAINT oauth_tokens_subject_key
                                 UNIQUE (provider_ref, user_id, agent_id)`);
      await db.orm.execute(sql`DELETE FROM schema_migrations WHERE name LIKE '0007_%'`);
      await db.orm.execute(sql`INSERT INTO organizations (id, name) VALUES (${ids.org}::uuid, 'm')`);
      await db.orm.execute(sql`INSERT INTO oauth_providers (id, organization_id, provider_id, name, client_id,
                                 auth_url, token_url, uses_pkce, code_challenge_method)
                               VALUES (${ids.provider}::uuid, ${ids.org}::uuid, 'p', 'P', 'c',
                                 'https://a.example/auth', 'https://a.example/token', true, 'S256')`);
      for (const [id, user] of [
        [ids.a, "u1"],
        [ids.b, "u2"],
      ] as const) {
        await db.orm.execute(sql`INSERT INTO oauth_tokens (id, organization_id, provider_ref, user_id, token_type,
                                   access_token_enc, issuer, issued_at)
                                 VALUES (${id}::uuid, ${ids.org}::uuid, ${ids.provider}::uuid, ${user}, 'bearer',
                                   'sw1.x', 'https://a.example', now())`);
      }
      const applied = await migrate(db, listMigrations());
      assert.deepEqual(applied, ["0007_oauth_tokens_agents.sql"]);
    });
    after(async () => {
      await test?.drop();
    });

    it("each existing token becomes its user's default; a second default is refused", async () => {
      const found = await rows<{ id: string; is_default: boolean }>(
        db.orm,
        sql`SELECT id::text AS id, is_default FROM oauth_tokens ORDER BY user_id`,
      );
      assert.deepEqual(found, [
        { id: ids.a, is_default: true },
        { id: ids.b, is_default: true },
      ]);
      await db.orm.execute(sql`INSERT INTO oauth_tokens (id, organization_id, provider_ref, user_id, token_type,
                                 access_token_enc, issuer, issued_at)
                               VALUES (${randomUUID()}::uuid, ${ids.org}::uuid, ${ids.provider}::uuid, 'u1',
                                 'bearer', 'sw1.y', 'https://a.example', now())`);
      await assert.rejects(
        db.orm.execute(sql`UPDATE oauth_tokens SET is_default = true WHERE user_id = 'u1'`),
        "at most one default per user, provider and agent",
      );
    });
  });
}
