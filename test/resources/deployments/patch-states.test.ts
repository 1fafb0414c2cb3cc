import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { sql } from "drizzle-orm";
import type { PatchState } from "../../../src/core/deployments/read-store.ts";
import { secretContextId, secretRows } from "../../../src/core/revisions/secrets-store.ts";
import { encryptionContext } from "../../../src/crypto/envelope.ts";
import { rows } from "../../../src/db/client.ts";
import { PatchStates } from "../../../src/resources/deployments/patch-states.ts";
import { call, createDocker, type Deployment } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";
import { PATCH_READ, PATCH_WRITE, statementsOf } from "../../helpers/statements.ts";

/**
 * Issue 13: a PATCH starts from the state this process's last PATCH of the deployment left, and
 * that state is only ever a guess. Here another writer (SQL on the database, a redeploy) changes
 * the deployment behind it: the guarded write changes nothing, and the PATCH reads afresh, writes
 * once and answers from what it read. A refusal or a no-op is never decided on a kept state.
 */

const state = (version: string): PatchState => ({
  version,
  latest: null,
  deployment: {
    id: "d",
    organization_id: "o",
    name: "n",
    source: "external_docker",
    deployment_type: "dev",
    source_config: {},
    image_version: null,
    status: "DEPLOYED",
    latest_revision_id: null,
    revision_count: 0,
    pending_revision: null,
    pending_secrets_enc: null,
    etag: '"e"',
  },
});

describe("PatchStates", () => {
  it("keeps a state per workspace and deployment id (any case)", () => {
    const states = new PatchStates();
    states.remember("w1", "ABC", state("1"));
    assert.equal(states.get("w1", "abc")?.version, "1");
    assert.equal(states.get("w2", "abc"), undefined, "another workspace never finds it");
  });

  it("forgets a state only while it is the version given (a newer one stays)", () => {
    const states = new PatchStates();
    states.remember("w", "d", state("2"));
    states.forget("w", "d", "1");
    assert.equal(states.get("w", "d")?.version, "2");
    states.forget("w", "d", "2");
    assert.equal(states.get("w", "d"), undefined);
  });

  it("holds at most its bound, dropping the least recently used first", () => {
    const states = new PatchStates(2);
    states.remember("w", "a", state("a"));
    states.remember("w", "b", state("b"));
    states.get("w", "a");
    states.remember("w", "c", state("c"));
    assert.equal(states.size, 2);
    assert.equal(states.get("w", "b"), undefined, "b was used least recently");
    assert.equal(states.get("w", "a")?.version, "a");
    assert.equal(states.get("w", "c")?.version, "c");
  });
});

forEachDatabase("PATCH /v2/deployments/{id}: a kept state that went stale", (suite, kind) => {
  const patch = (id: string, body: unknown, opts: { key?: string; headers?: Record<string, string> } = {}) =>
    call<Deployment>(suite.ctx, "PATCH", `/v2/deployments/${id}`, body, opts);
  const image = (tag: string) => ({ source_revision_config: { image_uri: `registry.example/app:${tag}` } });
  /** A change this process's PATCHes do not see: SQL on the database, as another process would write. */
  const behind = (text: ReturnType<typeof sql>) => suite.ctx.db.orm.execute(text);
  const etagOf = async (id: string) => {
    const [row] = await rows<{ etag: string }>(
      suite.ctx.db.orm,
      sql`SELECT slipway_etag(record) AS etag FROM deployments WHERE id = ${id}`,
    );
    return row?.etag ?? "";
  };
  const revisionsOf = async (id: string) =>
    rows<{ seq: number }>(
      suite.ctx.db.orm,
      sql`SELECT seq FROM revisions WHERE deployment_id = ${id} ORDER BY seq`,
    );
  const auditOf = async (id: string) =>
    rows<{ status_code: number }>(
      suite.ctx.db.orm,
      sql`SELECT status_code FROM audit_log WHERE resource_id = ${id} AND method = 'PATCH' ORDER BY at`,
    );
  /** Statements of `fn` on PostgreSQL; PGlite runs in this process, with none to count. */
  const counted = async (fn: () => Promise<void>): Promise<string[]> => {
    if (kind === "postgres") return statementsOf(fn);
    await fn();
    return [];
  };

  it("a write from a stale state changes nothing; the PATCH reads, writes once and keeps the other change", async () => {
    const d = await createDocker(suite.ctx);
    assert.equal((await patch(d.id, image("1"))).status, 200);
    await behind(sql`UPDATE deployments SET image_version = 'elsewhere' WHERE id = ${d.id}`);
    let res: Awaited<ReturnType<typeof patch>> | undefined;
    const statements = await counted(async () => {
      res = await patch(d.id, image("2"));
    });
    assert.equal(res?.status, 200, JSON.stringify(res?.body));
    assert.equal(res?.body.image_version, "elsewhere");
    assert.equal(res?.body.source_revision_config?.image_uri, "registry.example/app:2");
    assert.deepEqual(
      (await revisionsOf(d.id)).map((r) => r.seq),
      [1, 2, 3],
    );
    assert.deepEqual(await auditOf(d.id), [{ status_code: 200 }, { status_code: 200 }]);
    if (kind === "postgres") {
      const list = statements.map((s) => s.slice(0, 60)).join("\n");
      assert.equal(statements.length, 3, list);
      assert.match(statements[0] ?? "", PATCH_WRITE, list);
      assert.match(statements[1] ?? "", PATCH_READ, list);
      assert.match(statements[2] ?? "", PATCH_WRITE, list);
    }
  });

  it("If-Match is checked against the deployment as it is, not as it was kept", async () => {
    const d = await createDocker(suite.ctx);
    assert.equal((await patch(d.id, image("1"))).status, 200);
    const kept = await etagOf(d.id);
    await behind(sql`UPDATE deployments SET image_version = 'elsewhere' WHERE id = ${d.id}`);
    const now = await etagOf(d.id);
    assert.notEqual(now, kept);
    // The current ETag passes, though the kept state has the old one.
    const ok = await patch(d.id, image("2"), { headers: { "if-match": now } });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    // The old one fails, though the kept state had it when the stale write was tried.
    await behind(sql`UPDATE deployments SET image_version = 'again' WHERE id = ${d.id}`);
    const stale = await etagOf(d.id);
    const refused = await patch(d.id, image("3"), { headers: { "if-match": String(ok.headers.etag) } });
    assert.equal(refused.status, 412, JSON.stringify(refused.body));
    assert.equal(await etagOf(d.id), stale, "nothing was written");
    assert.deepEqual(
      (await revisionsOf(d.id)).map((r) => r.seq),
      [1, 2, 3],
    );
  });

  it("a deployment deleted or being deleted behind the kept state is 404 or 400, and nothing is written", async () => {
    const d = await createDocker(suite.ctx);
    assert.equal((await patch(d.id, image("1"))).status, 200);
    await behind(sql`UPDATE deployments SET status = 'AWAITING_DELETE' WHERE id = ${d.id}`);
    const deleting = await patch(d.id, image("2"));
    assert.equal(deleting.status, 400, JSON.stringify(deleting.body));
    assert.deepEqual(
      (await revisionsOf(d.id)).map((r) => r.seq),
      [1, 2],
    );
    await behind(sql`DELETE FROM deployments WHERE id = ${d.id}`);
    const gone = await patch(d.id, image("3"));
    assert.equal(gone.status, 404, JSON.stringify(gone.body));
  });

  it("another workspace's or organization's caller never starts from the kept state: 404", async () => {
    const d = await createDocker(suite.ctx);
    assert.equal((await patch(d.id, image("1"))).status, 200);
    for (const key of [suite.ctx.keys.boundMember, suite.ctx.other.admin]) {
      let res: Awaited<ReturnType<typeof patch>> | undefined;
      const statements = await counted(async () => {
        res = await patch(d.id, image("x"), { key });
      });
      assert.equal(res?.status, 404, JSON.stringify(res?.body));
      if (kind === "postgres")
        assert.ok(
          statements.some((s) => PATCH_READ.test(s)),
          "read afresh",
        );
    }
    assert.deepEqual(
      (await revisionsOf(d.id)).map((r) => r.seq),
      [1, 2],
    );
  });

  it("what the kept state calls nothing to change is decided on a fresh read", async () => {
    const d = await createDocker(suite.ctx);
    assert.equal((await patch(d.id, { image_version: "5" })).status, 200);
    await behind(sql`UPDATE deployments SET image_version = '6' WHERE id = ${d.id}`);
    const res = await patch(d.id, { image_version: "5" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.image_version, "5");
    const [row] = await rows<{ image_version: string }>(
      suite.ctx.db.orm,
      sql`SELECT image_version FROM deployments WHERE id = ${d.id}`,
    );
    assert.equal(row?.image_version, "5");
  });

  it("secrets carry over from the latest revision as it is: a redeploy behind the kept state wins", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx, { secrets: [{ name: "S", value: "first" }] });
    const first = d.latest_revision_id;
    assert.equal((await patch(d.id, { secrets: [{ name: "S", value: "second" }] })).status, 200);
    const redeploy = await call(ctx, "POST", `/v2/deployments/${d.id}/revisions/${first}/redeploy`);
    assert.ok(redeploy.status < 300, JSON.stringify(redeploy.body));
    const res = await patch(d.id, image("after"));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const secrets = await secretRows(ctx.db.orm, String(res.body.latest_revision_id));
    assert.deepEqual(
      secrets.map((s) => [
        s.name,
        ctx.keyring.decrypt(
          s.value_enc,
          encryptionContext("revision_secrets", "value_enc", secretContextId(s)),
        ),
      ]),
      [["S", "first"]],
    );
  });
});
