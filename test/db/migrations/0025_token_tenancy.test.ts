import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { sql } from "drizzle-orm";
import { type Database, rows } from "../../../src/db/client.ts";
import { listMigrations, migrate } from "../../../src/db/migrate.ts";
import { pickToken } from "../../../src/resources/oauth-tokens/store.ts";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../../helpers/databases.ts";

/**
 * Migration 0025 on a database holding tokens of the old model (a key's own tokens under
 * `apikey:<key id>`, named end users' tokens, one default per provider, user and agent): each
 * token moves to its tenant, and the key's successor finds what the key had.
 */
for (const kind of DB_KINDS) {
  describe(`migration 0025 moves tokens to their tenant [${kind}]`, () => {
    let test: TestDatabase;
    let db: Database;
    const ids = {
      org: randomUUID(),
      ws1: randomUUID(),
      ws2: randomUUID(),
      otherOrg: randomUUID(),
      provider: randomUUID(),
      otherProvider: randomUUID(),
      keyOrg: randomUUID(),
      keyOrg2: randomUUID(),
      keyWs2: randomUUID(),
      gone: randomUUID(),
    };
    const tok = {
      olderOwn: randomUUID(),
      newerOwn: randomUUID(),
      ws2Own: randomUUID(),
      named: randomUUID(),
      namedAgent: randomUUID(),
      goneKey: randomUUID(),
      otherOrg: randomUUID(),
    };
    const flow = randomUUID();

    before(async () => {
      test = await createTestDatabase(kind);
      db = test.db;
      const run = (q: ReturnType<typeof sql>) => db.orm.execute(q);
      // The state before 0025: drop what it added, then apply it again below.
      await run(sql`DROP INDEX oauth_tokens_default_key`);
      await run(sql`DROP INDEX oauth_tokens_tenant_idx`);
      await run(sql`ALTER TABLE oauth_tokens DROP COLUMN tenant_workspace_id`);
      await run(sql`ALTER TABLE oauth_flows DROP COLUMN tenant_workspace_id`);
      await run(sql`CREATE UNIQUE INDEX oauth_tokens_default_key ON oauth_tokens (provider_ref, user_id, agent_id)
                      WHERE is_default`);
      await run(sql`DELETE FROM schema_migrations WHERE name LIKE '0025_%'`);

      for (const [org, name] of [
        [ids.org, "m25"],
        [ids.otherOrg, "m25-other"],
      ] as const) {
        await run(sql`INSERT INTO organizations (id, name) VALUES (${org}::uuid, ${name})`);
      }
      for (const ws of [ids.ws1, ids.ws2]) {
        await run(
          sql`INSERT INTO workspaces (id, organization_id, name) VALUES (${ws}::uuid, ${ids.org}::uuid, ${ws})`,
        );
      }
      for (const [id, ws, revoked] of [
        [ids.keyOrg, null, true],
        [ids.keyOrg2, null, false],
        [ids.keyWs2, ids.ws2, false],
      ] as const) {
        await run(sql`INSERT INTO api_keys (id, organization_id, workspace_id, role, prefix, key_hash, revoked_at)
                      VALUES (${id}::uuid, ${ids.org}::uuid, ${ws}::uuid, 'member', 'sw_x', ${id},
                        ${revoked ? sql`now()` : sql`NULL`})`);
      }
      for (const [id, org] of [
        [ids.provider, ids.org],
        [ids.otherProvider, ids.otherOrg],
      ] as const) {
        await run(sql`INSERT INTO oauth_providers (id, organization_id, provider_id, name, client_id, auth_url,
                        token_url, uses_pkce, code_challenge_method)
                      VALUES (${id}::uuid, ${org}::uuid, 'p', 'P', 'c', 'https://a.example/auth',
                        'https://a.example/token', true, 'S256')`);
      }
      const token = (
        id: string,
        user: string,
        opts: { agent?: string; ws?: string | null; age?: number; org?: string; provider?: string } = {},
      ) =>
        run(sql`INSERT INTO oauth_tokens (id, organization_id, provider_ref, user_id, agent_id, token_type,
                  access_token_enc, issuer, issued_at, is_default, workspace_id, updated_at)
                VALUES (${id}::uuid, ${opts.org ?? ids.org}::uuid, ${opts.provider ?? ids.provider}::uuid, ${user},
                  ${opts.agent ?? ""}, 'bearer', 'sw1.x', 'https://a.example', now(), true,
                  ${opts.ws ?? null}::uuid, now() - make_interval(mins => ${opts.age ?? 0}))`);
      // Two organization-level keys each had their own default: the key that was rotated away
      // (revoked) and its successor, whose token is the more recently renewed.
      await token(tok.olderOwn, `apikey:${ids.keyOrg}`, { ws: ids.ws1, age: 10 });
      await token(tok.newerOwn, `apikey:${ids.keyOrg2}`, { ws: ids.ws1, age: 1 });
      await token(tok.ws2Own, `apikey:${ids.keyWs2}`, { ws: ids.ws2 });
      await token(tok.named, "u1", { ws: ids.ws2 });
      await token(tok.namedAgent, "u1", { agent: "bot" });
      await token(tok.goneKey, `apikey:${ids.gone}`);
      // A label naming a key of another organization is left alone.
      await token(tok.otherOrg, `apikey:${ids.keyOrg}`, { org: ids.otherOrg, provider: ids.otherProvider });
      await run(sql`INSERT INTO oauth_flows (id, organization_id, provider_ref, user_id, state_hash, redirect_uri,
                      expires_at, workspace_id)
                    VALUES (${flow}::uuid, ${ids.org}::uuid, ${ids.provider}::uuid, ${`apikey:${ids.keyWs2}`},
                      'h', 'https://s.example/cb', now() + interval '5 minutes', ${ids.ws2}::uuid)`);

      const applied = await migrate(db, listMigrations());
      assert.deepEqual(applied, ["0025_token_tenancy.sql"]);
    });
    after(async () => {
      await test?.drop();
    });

    interface Row {
      id: string;
      user_id: string;
      tenant: string | null;
      is_default: boolean;
      workspace_id: string | null;
    }
    const tokens = async () =>
      new Map(
        (
          await rows<Row>(
            db.orm,
            sql`SELECT id::text AS id, user_id, tenant_workspace_id::text AS tenant, is_default,
                       workspace_id::text AS workspace_id FROM oauth_tokens`,
          )
        ).map((r) => [r.id, r]),
      );

    it("a key's own tokens become its tenant's own; one default per tenant, user and agent", async () => {
      const t = await tokens();
      const orgLabel = `organization:${ids.org}`;
      assert.deepEqual(t.get(tok.olderOwn), {
        id: tok.olderOwn,
        user_id: orgLabel,
        tenant: null,
        is_default: false,
        workspace_id: ids.ws1,
      });
      assert.deepEqual(t.get(tok.newerOwn), {
        id: tok.newerOwn,
        user_id: orgLabel,
        tenant: null,
        is_default: true,
        workspace_id: ids.ws1,
      });
      assert.deepEqual(t.get(tok.ws2Own), {
        id: tok.ws2Own,
        user_id: `workspace:${ids.ws2}`,
        tenant: ids.ws2,
        is_default: true,
        workspace_id: ids.ws2,
      });
      // A new key of the same tenant gets what the rotated keys had, as authenticate picks it.
      const picked = await pickToken(db.orm, {
        organizationId: ids.org,
        tenantWorkspaceId: null,
        providerRef: ids.provider,
        userId: orgLabel,
        agentId: "",
      });
      assert.equal(picked?.id, tok.newerOwn);
    });

    it("named users' tokens stay the organization's; unknown keys and other organizations are left alone", async () => {
      const t = await tokens();
      for (const id of [tok.named, tok.namedAgent]) {
        assert.equal(t.get(id)?.user_id, "u1");
        assert.equal(t.get(id)?.tenant, null);
        assert.equal(t.get(id)?.is_default, true);
      }
      assert.equal(t.get(tok.named)?.workspace_id, ids.ws2, "where it was obtained is kept");
      assert.deepEqual(
        [t.get(tok.goneKey)?.user_id, t.get(tok.goneKey)?.tenant],
        [`apikey:${ids.gone}`, null],
      );
      assert.deepEqual(
        [t.get(tok.otherOrg)?.user_id, t.get(tok.otherOrg)?.tenant],
        [`apikey:${ids.keyOrg}`, null],
      );
    });

    it("a pending flow of a key finishes into the key's tenant", async () => {
      const [f] = await rows<{ user_id: string; tenant: string | null }>(
        db.orm,
        sql`SELECT user_id, tenant_workspace_id::text AS tenant FROM oauth_flows WHERE id = ${flow}::uuid`,
      );
      assert.deepEqual(f, { user_id: `workspace:${ids.ws2}`, tenant: ids.ws2 });
    });

    it("the default is unique per tenant: a second one is refused, another tenant's is not", async () => {
      const insert = (tenant: string | null) =>
        db.orm.execute(sql`INSERT INTO oauth_tokens (id, organization_id, tenant_workspace_id, provider_ref, user_id,
                             token_type, access_token_enc, issuer, issued_at, is_default)
                           VALUES (${randomUUID()}::uuid, ${ids.org}::uuid, ${tenant}::uuid, ${ids.provider}::uuid,
                             'u1', 'bearer', 'sw1.y', 'https://a.example', now(), true)`);
      await assert.rejects(insert(null), "the organization already has u1's default");
      await insert(ids.ws2);
      await assert.rejects(insert(ids.ws2), "and now so has workspace 2");
    });
  });
}
