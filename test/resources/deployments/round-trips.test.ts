import assert from "node:assert/strict";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import pg from "pg";
import { encryptionContext } from "../../../src/crypto/envelope.ts";
import { rows } from "../../../src/db/client.ts";
import { secretContextId } from "../../../src/resources/revisions/store.ts";
import {
  assertMatches,
  call,
  createDocker,
  type Deployment,
  deploymentSchema,
} from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

/**
 * Issue 13: a revision-creating PATCH is at most 4 round trips to PostgreSQL, every statement
 * counted (BEGIN, one read, one write, COMMIT): the write returns the record and carries the
 * reconciler's and the event stream's NOTIFY, the change's `revision.status_changed` events, their
 * webhook deliveries and the request's audit record (with its status code, so nothing follows the
 * response). A kept secret's envelope is copied, not opened and sealed again. Counted by wrapping
 * the driver's `Client.query`, which every statement to the server goes through (pool clients
 * included).
 */

interface Secret {
  name: string;
  value_enc: string;
  id: string;
  deployment_id: string | null;
}

type QueryFn = (...args: unknown[]) => unknown;
const proto = pg.Client.prototype as unknown as { query: QueryFn };

/** Runs `fn`, returning the text of every statement sent to the server meanwhile. */
async function statementsOf(fn: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const first = args[0];
    seen.push(typeof first === "string" ? first : String((first as { text?: string }).text));
    return original.apply(this, args);
  };
  try {
    await fn();
  } finally {
    proto.query = original;
  }
  return seen;
}

async function secretsOf(ctx: TestContext, revisionId: string | null): Promise<Secret[]> {
  return rows<Secret>(
    ctx.db.orm,
    sql`SELECT id, name, value_enc, deployment_id FROM revision_secrets WHERE revision_id = ${revisionId}
         ORDER BY position`,
  );
}

const open = (ctx: TestContext, s: Secret) =>
  ctx.keyring.decrypt(s.value_enc, encryptionContext("revision_secrets", "value_enc", secretContextId(s)));

forEachDatabase("PATCH /v2/deployments/{id}: round trips and secret envelopes", (suite, kind) => {
  const patch = (id: string, body: unknown) =>
    call<Deployment>(suite.ctx, "PATCH", `/v2/deployments/${id}`, body);

  it("a revision-creating PATCH is at most 4 statements, also with secrets and in-place fields", {
    skip: kind === "pglite" ? "PGlite runs in this process: there are no round trips to count" : false,
  }, async () => {
    const d = await createDocker(suite.ctx, { secrets: [{ name: "A", value: "a" }] });
    // Warm: the key is in the auth cache, as it is for any client after its first request.
    assert.equal((await patch(d.id, { image_version: "0" })).status, 200);
    const bodies = [
      { source_revision_config: { image_uri: "registry.example/app:2" } },
      {
        image_version: "2",
        secrets: [
          { name: "A", value: "********" },
          { name: "B", value: "b" },
        ],
        source_revision_config: { image_uri: "registry.example/app:3" },
      },
    ];
    for (const body of bodies) {
      let res: Awaited<ReturnType<typeof patch>> | undefined;
      const statements = await statementsOf(async () => {
        res = await patch(d.id, body);
      });
      assert.equal(res?.status, 200, JSON.stringify(res?.body));
      assertMatches(deploymentSchema, res?.body);
      const list = statements.map((s) => s.slice(0, 120)).join("\n");
      assert.ok(statements.length <= 4, `${statements.length} statements:\n${list}`);
      assert.match(statements[0] ?? "", /^BEGIN/, list);
      assert.match(statements.at(-1) ?? "", /^COMMIT/, list);
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
