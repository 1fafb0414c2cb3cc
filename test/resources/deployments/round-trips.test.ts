// Why over 300 lines: the write path of a PATCH statement by statement, including every race with another writer.
import assert from "node:assert/strict";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import pg from "pg";
import type { WriteTarget } from "../../../src/core/deployments/write-store.ts";
import { secretContextId, secretRows } from "../../../src/core/revisions/secrets-store.ts";
import { encryptionContext } from "../../../src/crypto/envelope.ts";
import { type Database, rows } from "../../../src/db/client.ts";
import {
  assertMatches,
  call,
  createDocker,
  type Deployment,
  deploymentSchema,
} from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { PATCH_READ, PATCH_WRITE, statementsOf } from "../../helpers/statements.ts";

/**
 * Issue 13: a revision-creating PATCH is 1 round trip to PostgreSQL when this process's last PATCH
 * of the deployment left its state (patch-states.ts), 2 otherwise, every statement counted: one
 * read (with the row's version), then one write guarded by that version, which is its own
 * transaction and returns the record, carrying the reconciler's and the event stream's NOTIFY, the
 * change's `revision.status_changed` events, their webhook deliveries and the request's audit
 * record (with its status code, so nothing follows the response). A write that lost a race to
 * another changes nothing and the PATCH reads again; after 3 such losses it takes the row lock
 * (BEGIN, locked read, write, COMMIT). A kept secret's envelope is copied, not opened and sealed
 * again. (patch-states.test.ts: a kept state that went stale.)
 */

// A write without a row version must run in the transaction that holds the row lock: on the pool
// the type refuses it (`npm run lint` fails when this stops being an error).
function unguardedOnPool(db: Database): WriteTarget {
  // @ts-expect-error the pool needs `ifVersion`
  return { exec: db };
}
void unguardedOnPool;

interface Secret {
  name: string;
  value_enc: string;
  id: string;
  deployment_id: string | null;
}

async function secretsOf(ctx: TestContext, revisionId: string | null): Promise<Secret[]> {
  return revisionId === null ? [] : secretRows(ctx.db.orm, revisionId);
}

const open = (ctx: TestContext, s: Secret) =>
  ctx.keyring.decrypt(s.value_enc, encryptionContext("revision_secrets", "value_enc", secretContextId(s)));

forEachDatabase("PATCH /v2/deployments/{id}: round trips and secret envelopes", (suite, kind) => {
  const patch = (id: string, body: unknown) =>
    call<Deployment>(suite.ctx, "PATCH", `/v2/deployments/${id}`, body);

  it("a revision-creating PATCH is 2 statements, then 1 once this process PATCHed the deployment", {
    skip: kind === "pglite" ? "PGlite runs in this process: there are no round trips to count" : false,
  }, async () => {
    const d = await createDocker(suite.ctx, { secrets: [{ name: "A", value: "a" }] });
    // Warm: the key is in the auth cache, as it is for any client after its first request.
    await call(suite.ctx, "GET", `/v2/deployments/${d.id}`);
    const bodies: [unknown, number][] = [
      // The first PATCH of the deployment on this process reads it.
      [{ source_revision_config: { image_uri: "registry.example/app:1" } }, 2],
      [{ source_revision_config: { image_uri: "registry.example/app:2" } }, 1],
      [
        {
          image_version: "2",
          secrets: [
            { name: "A", value: "********" },
            { name: "B", value: "b" },
          ],
          source_revision_config: { image_uri: "registry.example/app:3" },
        },
        1,
      ],
      // Kept after an in-place write as well (which writes its audit record after it).
      [{ image_version: "3" }, 2],
      [{ source_config: { resource_spec: { cpu: 2 } } }, 1],
    ];
    for (const [body, expected] of bodies) {
      let res: Awaited<ReturnType<typeof patch>> | undefined;
      const statements = await statementsOf(async () => {
        res = await patch(d.id, body);
      });
      assert.equal(res?.status, 200, JSON.stringify(res?.body));
      assertMatches(deploymentSchema, res?.body);
      const list = statements.map((s) => s.slice(0, 120)).join("\n");
      assert.equal(statements.length, expected, `${statements.length} statements:\n${list}`);
      if (isSetImage(body)) assert.equal(res?.body.image_version, body.image_version);
      if (!isRevision(body)) {
        assert.match(statements[0] ?? "", /^UPDATE deployments SET source_config/, list);
        assert.match(statements[1] ?? "", /^INSERT INTO audit_log/, list);
        continue;
      }
      assert.equal(PATCH_READ.test(statements[0] ?? ""), expected === 2, list);
      assert.match(statements.at(-1) ?? "", PATCH_WRITE, list);
      // What the one write recorded: the new revision's QUEUED event and the request's audit record.
      const revisionId = res?.body.latest_revision_id;
      const events = await rows<{ body: string }>(
        suite.ctx.db.orm,
        sql`SELECT body FROM events WHERE type = 'revision.status_changed'
             AND body::json->'data'->>'revision_id' = ${revisionId} ORDER BY pk`,
      );
      assert.equal(events.length, 1);
      const data = (JSON.parse(events[0]?.body ?? "{}") as { data: Record<string, unknown> }).data;
      assert.deepEqual(
        { ...data },
        {
          revision_id: revisionId,
          deployment_id: d.id,
          deployment_name: d.name,
          status: "QUEUED",
          status_message: data.status_message,
          tenant_id: d.tenant_id,
        },
      );
      const audit = await rows<{ status_code: number | null }>(
        suite.ctx.db.orm,
        sql`SELECT status_code FROM audit_log WHERE resource_id = ${d.id} AND method = 'PATCH'
             ORDER BY at DESC LIMIT 1`,
      );
      assert.equal(audit[0]?.status_code, 200);
    }
  });

  const isSetImage = (body: unknown): body is { image_version: string } =>
    typeof (body as { image_version?: unknown }).image_version === "string";
  const isRevision = (body: unknown) => Object.keys(body as object).some((k) => k !== "image_version");

  /** What one deployment holds after PATCHes: its revisions (seq order), audit records and QUEUED events. */
  async function written(id: string) {
    const db = suite.ctx.db.orm;
    const revisions = await rows<{ id: string; seq: number; status: string }>(
      db,
      sql`SELECT id, seq, status FROM revisions WHERE deployment_id = ${id} ORDER BY seq`,
    );
    const audit = await rows<{ status_code: number | null }>(
      db,
      sql`SELECT status_code FROM audit_log WHERE resource_id = ${id} AND method = 'PATCH' ORDER BY at`,
    );
    const queued = await rows<{ revision_id: string }>(
      db,
      sql`SELECT body::json->'data'->>'revision_id' AS revision_id FROM events
           WHERE type = 'revision.status_changed' AND body::json->'data'->>'deployment_id' = ${id}
             AND body::json->'data'->>'status' = 'QUEUED' ORDER BY pk`,
    );
    const [count] = await rows<{ revision_count: number; latest_revision_id: string }>(
      db,
      sql`SELECT revision_count, latest_revision_id FROM deployments WHERE id = ${id}`,
    );
    return { revisions, audit, queued, count };
  }

  const postgresOnly = (kind: string) =>
    kind === "pglite" ? "PGlite runs in this process: no statement can be slipped between two" : false;

  /** A change by another connection, between a PATCH's read and its write. */
  async function racer(id: string, times: number) {
    const client = new pg.Client({ connectionString: suite.ctx.dbUrl });
    await client.connect();
    let left = times;
    return {
      race: async () => {
        if (left === 0) return;
        left--;
        await client.query("UPDATE deployments SET image_version = $1 WHERE id = $2", [`raced-${left}`, id]);
      },
      end: () => client.end(),
    };
  }

  const ownStatements = (statements: string[]) =>
    statements.filter((t) => !t.startsWith("UPDATE deployments SET image_version = $1"));

  it("a write that lost a race changes nothing; the PATCH reads again, keeps the other change and writes once", {
    skip: postgresOnly(kind),
  }, async () => {
    const d = await createDocker(suite.ctx, { secrets: [{ name: "A", value: "a" }] });
    const r = await racer(d.id, 1);
    let res: Awaited<ReturnType<typeof patch>> | undefined;
    const statements = await statementsOf(async () => {
      res = await patch(d.id, { source_revision_config: { image_uri: "registry.example/app:9" } });
    }, r.race).finally(() => r.end());
    assert.equal(res?.status, 200, JSON.stringify(res?.body));
    const list = ownStatements(statements);
    assert.equal(list.length, 4, list.join("\n"));
    assert.match(list[2] ?? "", PATCH_READ);
    assert.equal(res?.body.image_version, "raced-0", "the racing change is kept");
    assert.equal(res?.body.source_revision_config?.image_uri, "registry.example/app:9");
    const after = await written(d.id);
    assert.deepEqual(
      after.revisions.map((x) => x.seq),
      [1, 2],
    );
    assert.equal(after.count?.revision_count, 2);
    assert.equal(after.count?.latest_revision_id, res?.body.latest_revision_id);
    assert.deepEqual(after.audit, [{ status_code: 200 }], "one audit record, written with the change");
    assert.deepEqual(after.queued.at(-1), { revision_id: res?.body.latest_revision_id });
    assert.equal(
      after.queued.length,
      2,
      "the first revision's QUEUED, then this one's: none from the lost write",
    );
  });

  it("after 3 lost races the PATCH takes the row lock and writes in a transaction", {
    skip: postgresOnly(kind),
  }, async () => {
    const d = await createDocker(suite.ctx);
    const r = await racer(d.id, 3);
    let res: Awaited<ReturnType<typeof patch>> | undefined;
    const statements = await statementsOf(async () => {
      res = await patch(d.id, { source_revision_config: { image_uri: "registry.example/app:7" } });
    }, r.race).finally(() => r.end());
    assert.equal(res?.status, 200, JSON.stringify(res?.body));
    const list = ownStatements(statements);
    assert.equal(list.length, 10, list.join("\n"));
    assert.match(list[6] ?? "", /^BEGIN/);
    assert.match(list[7] ?? "", /FOR UPDATE OF d$/);
    assert.match(list[8] ?? "", PATCH_WRITE);
    assert.match(list[9] ?? "", /^COMMIT/);
    const after = await written(d.id);
    assert.deepEqual(
      after.revisions.map((x) => x.seq),
      [1, 2],
    );
    assert.deepEqual(after.audit, [{ status_code: 200 }]);
    assert.equal(res?.body.image_version, "raced-0");
  });

  it("a lost race checks If-Match again: the racing change makes it 412, and nothing is written", {
    skip: postgresOnly(kind),
  }, async () => {
    const d = await createDocker(suite.ctx);
    const got = await suite.ctx.app.inject({
      method: "GET",
      url: `/v2/deployments/${d.id}`,
      headers: suite.ctx.headers(suite.ctx.keys.member),
    });
    const etag = String(got.headers.etag);
    const r = await racer(d.id, 1);
    let res: Awaited<ReturnType<typeof patch>> | undefined;
    await statementsOf(async () => {
      res = await call<Deployment>(
        suite.ctx,
        "PATCH",
        `/v2/deployments/${d.id}`,
        { source_revision_config: { image_uri: "registry.example/app:8" } },
        { headers: { "if-match": etag } },
      );
    }, r.race).finally(() => r.end());
    assert.equal(res?.status, 412, JSON.stringify(res?.body));
    const after = await written(d.id);
    assert.deepEqual(
      after.revisions.map((x) => x.seq),
      [1],
    );
    assert.deepEqual(after.audit, [{ status_code: 412 }]);
  });

  it("PATCHes racing on one deployment all land, one revision each, in turn", async () => {
    const d = await createDocker(suite.ctx);
    const n = 8;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        patch(d.id, { source_revision_config: { image_uri: `registry.example/app:race-${i}` } }),
      ),
    );
    for (const res of results) assert.equal(res.status, 200, JSON.stringify(res.body));
    const after = await written(d.id);
    assert.deepEqual(
      after.revisions.map((x) => x.seq),
      Array.from({ length: n + 1 }, (_, i) => i + 1),
    );
    assert.equal(after.count?.revision_count, n + 1);
    assert.equal(after.count?.latest_revision_id, after.revisions.at(-1)?.id);
    // Each answer names the revision its own write made: all different.
    assert.equal(new Set(results.map((res) => res.body.latest_revision_id)).size, n);
    assert.deepEqual(
      after.revisions.map((x) => x.status),
      [...Array.from({ length: n }, () => "SKIPPED"), "QUEUED"],
    );
    assert.equal(after.audit.length, n);
    assert.ok(after.audit.every((a) => a.status_code === 200));
    assert.equal(after.queued.length, n + 1);
  });

  it("a kept secret's envelope is copied as is; new values are sealed; the record shows both", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx, { secrets: [{ name: "KEEP", value: "k-1" }] });
    const [before] = await secretsOf(ctx, d.latest_revision_id);
    assert.ok(before);
    const res = await patch(d.id, {
      secrets: [
        { name: "KEEP", value: "********" },
        { name: "NEW", value: "n-1" },
      ],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.secrets, [
      { name: "KEEP", value: "********" },
      { name: "NEW", value: "********" },
    ]);
    const after = await secretsOf(ctx, res.body.latest_revision_id);
    assert.equal(after[0]?.value_enc, before.value_enc, "the kept value's envelope is the same bytes");
    assert.notEqual(after[0]?.id, before.id);
    assert.deepEqual(
      after.map((s) => [s.name, open(ctx, s)]),
      [
        ["KEEP", "k-1"],
        ["NEW", "n-1"],
      ],
    );
    // Moving an envelope to another deployment does not open there: it is bound to deployment and name.
    const other = await createDocker(ctx, { secrets: [{ name: "KEEP", value: "other" }] });
    const [theirs] = await secretsOf(ctx, other.latest_revision_id);
    assert.ok(theirs);
    assert.throws(() => open(ctx, { ...theirs, value_enc: before.value_enc }));
  });

  it("a secret stored before migration 0008 (bound to its row) still opens, and is sealed anew when copied", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx, { secrets: [{ name: "OLD", value: "o-1" }] });
    const [row] = await secretsOf(ctx, d.latest_revision_id);
    assert.ok(row);
    // Rewrite it the way rows were written before: bound to the row id, no deployment_id.
    const legacy = ctx.keyring.encrypt("o-1", encryptionContext("revision_secrets", "value_enc", row.id));
    await ctx.db.orm.execute(
      sql`UPDATE revision_secrets SET value_enc = ${legacy}, deployment_id = NULL WHERE id = ${row.id}`,
    );
    const res = await patch(d.id, { source_revision_config: { image_uri: "registry.example/app:9" } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const [copied] = await secretsOf(ctx, res.body.latest_revision_id);
    assert.ok(copied);
    assert.equal(copied.deployment_id, d.id);
    assert.notEqual(copied.value_enc, legacy);
    assert.equal(open(ctx, copied), "o-1");
  });
});
