import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { sql } from "drizzle-orm";
import { type Database, rows } from "../../../src/db/client.ts";
import { migrate } from "../../../src/db/migrate.ts";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../../helpers/databases.ts";

/**
 * Migration 0027: providers gain template, template_params and api_base_url, tokens the broken
 * state, last refresh and last error. Rows that exist keep what they had: no template, no base
 * URL, not broken, never refreshed, no error.
 */
for (const kind of DB_KINDS) {
  describe(`migration 0027: catalog and broken-token columns on existing rows [${kind}]`, () => {
    let test: TestDatabase;
    let db: Database;
    const ids = { org: randomUUID(), provider: randomUUID(), token: randomUUID() };

    before(async () => {
      test = await createTestDatabase(kind);
      db = test.db;
      const run = (q: ReturnType<typeof sql>) => db.orm.execute(q);
      // The state before 0027: drop what it added, then apply it again below.
      for (const column of ["template", "template_params", "api_base_url"]) {
        await run(sql.raw(`ALTER TABLE oauth_providers DROP COLUMN ${column}`));
      }
      for (const column of [
        "broken_at",
        "broken_reason",
        "last_refreshed_at",
        "last_error",
        "last_error_at",
      ]) {
        await run(sql.raw(`ALTER TABLE oauth_tokens DROP COLUMN ${column}`));
      }
      await run(sql`DELETE FROM schema_migrations WHERE name LIKE '0027_%'`);
      await run(sql`INSERT INTO organizations (id, name) VALUES (${ids.org}::uuid, 'm27')`);
      await run(sql`INSERT INTO oauth_providers (id, organization_id, provider_id, name, client_id, auth_url,
                      token_url, uses_pkce, code_challenge_method)
                    VALUES (${ids.provider}::uuid, ${ids.org}::uuid, 'p', 'P', 'c', 'https://a.example/a',
                      'https://a.example/t', true, 'S256')`);
      await run(sql`INSERT INTO oauth_tokens (id, organization_id, provider_ref, user_id, token_type,
                      access_token_enc, issuer, issued_at)
                    VALUES (${ids.token}::uuid, ${ids.org}::uuid, ${ids.provider}::uuid, 'u', 'bearer', 'sw1.x',
                      'https://a.example', now())`);
      assert.deepEqual(await migrate(db), ["0027_oauth_catalog.sql"]);
    });
    after(async () => {
      await test?.drop();
    });

    it("existing providers have no template and no API base URL; existing tokens are sound", async () => {
      const [p] = await rows<{
        template: string | null;
        template_params: unknown;
        api_base_url: string | null;
      }>(
        db.orm,
        sql`SELECT template, template_params, api_base_url FROM oauth_providers WHERE id = ${ids.provider}::uuid`,
      );
      assert.deepEqual(p, { template: null, template_params: {}, api_base_url: null });
      const [t] = await rows<Record<string, unknown>>(
        db.orm,
        sql`SELECT broken_at, broken_reason, last_refreshed_at, last_error, last_error_at
              FROM oauth_tokens WHERE id = ${ids.token}::uuid`,
      );
      assert.deepEqual(t, {
        broken_at: null,
        broken_reason: null,
        last_refreshed_at: null,
        last_error: null,
        last_error_at: null,
      });
    });
  });
}
