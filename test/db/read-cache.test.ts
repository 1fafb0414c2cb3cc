import assert from "node:assert/strict";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import pg from "pg";
import { RECORDS_CHANNEL } from "../../src/db/channels.ts";
import { rows } from "../../src/db/client.ts";
import { LISTENER_NAME } from "../../src/db/pg-listener.ts";
import { ReadCache } from "../../src/db/read-cache.ts";
import { call, createDocker } from "../helpers/deployments.ts";
import { eventually } from "../helpers/eventually.ts";
import { forEachDatabase } from "../helpers/harness.ts";

const WS_A = "00000000-0000-4000-8000-00000000000a";
const WS_B = "00000000-0000-4000-8000-00000000000b";

/** A loader that counts its calls and answers `value()` (a fresh string each time). */
function counted(value: () => string) {
  const loader = { calls: 0, load: async () => `${value()}#${++loader.calls}` };
  return loader;
}

const len = (s: string) => s.length;

forEachDatabase("ReadCache", (suite, kind) => {
  it("answers a repeated read from memory, per workspace and key", async () => {
    const cache = new ReadCache(suite.ctx.db, 1024 * 1024);
    await cache.start();
    try {
      const l = counted(() => "a");
      assert.equal(await cache.read(WS_A, "k", l.load, len), "a#1");
      assert.equal(await cache.read(WS_A, "k", l.load, len), "a#1");
      // Another key, or the same key of another workspace, is its own entry.
      assert.equal(await cache.read(WS_A, "k2", l.load, len), "a#2");
      assert.equal(await cache.read(WS_B, "k", l.load, len), "a#3");
      assert.equal(cache.size.entries, 3);
    } finally {
      await cache.close();
    }
  });

  it("drops a workspace's answers on its notification, and only that workspace's", async () => {
    const cache = new ReadCache(suite.ctx.db, 1024 * 1024);
    await cache.start();
    try {
      const l = counted(() => "v");
      await cache.read(WS_A, "k", l.load, len);
      await cache.read(WS_B, "k", l.load, len);
      await suite.ctx.db.notify(RECORDS_CHANNEL, WS_A);
      await eventually("the notification", () => cache.size.entries === 1);
      assert.equal(await cache.read(WS_B, "k", l.load, len), "v#2", "B is still cached");
      assert.equal(await cache.read(WS_A, "k", l.load, len), "v#3", "A is read again");
    } finally {
      await cache.close();
    }
  });

  it("does not keep a read that raced with an invalidation of its workspace", async () => {
    const cache = new ReadCache(suite.ctx.db, 1024 * 1024);
    await cache.start();
    try {
      let n = 0;
      const racing = async () => {
        n++;
        // The change commits while this read is on its way: what it read may be the old state.
        cache.invalidate(WS_A);
        return `old#${n}`;
      };
      assert.equal(await cache.read(WS_A, "k", racing, len), "old#1");
      assert.equal(cache.size.entries, 0);
      const l = counted(() => "new");
      assert.equal(await cache.read(WS_A, "k", l.load, len), "new#1");
      assert.equal(await cache.read(WS_A, "k", l.load, len), "new#1");
    } finally {
      await cache.close();
    }
  });

  it("keeps nothing when a load fails, and nothing at all when turned off", async () => {
    const cache = new ReadCache(suite.ctx.db, 1024 * 1024);
    await cache.start();
    const off = new ReadCache(suite.ctx.db, 0);
    await off.start();
    try {
      await assert.rejects(
        cache.read(WS_A, "k", (): Promise<string> => Promise.reject(new Error("not found")), len),
        /not found/,
      );
      assert.equal(cache.size.entries, 0);
      const l = counted(() => "x");
      await off.read(WS_A, "k", l.load, len);
      assert.equal(await off.read(WS_A, "k", l.load, len), "x#2");
      assert.equal(off.enabled, false);
    } finally {
      await cache.close();
      await off.close();
    }
  });

  it("stays within its memory bound, dropping the oldest answers first", async () => {
    const cache = new ReadCache(suite.ctx.db, 4000);
    await cache.start();
    try {
      const big = async () => "x".repeat(900);
      for (let i = 0; i < 10; i++) await cache.read(WS_A, `k${i}`, big, len);
      assert.ok(cache.size.bytes <= 4000, `${cache.size.bytes} bytes`);
      assert.equal(cache.size.entries, 4);
      // An answer over a quarter of the bound is never kept.
      await cache.read(WS_A, "huge", async () => "x".repeat(1200), len);
      assert.equal(cache.size.entries, 4);
      const l = counted(() => "loaded");
      assert.match(await cache.read(WS_A, "k9", l.load, len), /^x+$/, "the newest is kept");
      assert.equal(await cache.read(WS_A, "k0", l.load, len), "loaded#1", "the oldest was dropped");
    } finally {
      await cache.close();
    }
  });

  it("changes of records announce their workspace; other writes announce nothing", async () => {
    const { db, workspaceId } = suite.ctx;
    const heard: string[] = [];
    const unlisten = await db.listen(RECORDS_CHANNEL, (ws) => heard.push(ws));
    const settle = async (what: string, expected: number) =>
      eventually(what, () => heard.length >= expected).then(() => heard.splice(0));
    try {
      const d = await createDocker(suite.ctx);
      await eventually("create", () => heard.length >= 1);
      // The first revision is also announced just after the commit (db/announce.ts).
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual([...new Set(heard.splice(0))], [workspaceId]);
      await db.orm.execute(sql`UPDATE deployments SET status = 'READY' WHERE id = ${d.id}`);
      assert.deepEqual(await settle("status", 1), [workspaceId]);
      await db.orm.execute(sql`UPDATE deployments SET remote_reconciled = true WHERE id = ${d.id}`);
      assert.deepEqual(await settle("remote_reconciled", 1), [workspaceId]);
      await db.orm.execute(
        sql`UPDATE revisions SET status_message = 'moved' WHERE id = ${d.latest_revision_id}`,
      );
      assert.deepEqual(await settle("revision", 1), [workspaceId]);
      const [value] = await rows<{ id: string }>(
        db.orm,
        sql`WITH k AS (INSERT INTO tag_keys (workspace_id, key) VALUES (${workspaceId}, 'rc') RETURNING id)
            INSERT INTO tag_values (tag_key_id, value) SELECT id, 'v' FROM k RETURNING id`,
      );
      await db.orm.execute(
        sql`INSERT INTO deployment_tags (deployment_id, tag_value_id) VALUES (${d.id}, ${value?.id})`,
      );
      assert.deepEqual(await settle("tagging", 1), [workspaceId]);
      // Not part of any answer: no notification. A marker notification proves the quiet one.
      await db.orm.execute(sql`UPDATE deployments SET last_request_at = now() WHERE id = ${d.id}`);
      await db.notify(RECORDS_CHANNEL, "marker");
      assert.deepEqual(await settle("marker", 1), ["marker"]);
      // A move to the other workspace announces both.
      await db.orm.execute(
        sql`UPDATE deployments SET workspace_id = ${suite.ctx.workspace2Id} WHERE id = ${d.id}`,
      );
      assert.deepEqual((await settle("move", 2)).sort(), [workspaceId, suite.ctx.workspace2Id].sort());
      await db.orm.execute(sql`DELETE FROM deployments WHERE id = ${d.id}`);
      assert.deepEqual([...new Set(await settle("delete", 1))], [suite.ctx.workspace2Id]);
    } finally {
      await unlisten();
    }
  });

  if (kind === "postgres") {
    it("after the listening connection is lost: nothing cached until it is back, then all dropped", async () => {
      const { db, dbUrl } = suite.ctx;
      const cache = new ReadCache(db, 1024 * 1024);
      await cache.start();
      const admin = new pg.Client({ connectionString: dbUrl });
      await admin.connect();
      try {
        const before = db.listenEpoch();
        assert.notEqual(before, undefined);
        const l = counted(() => "v");
        await cache.read(WS_A, "k", l.load, len);
        assert.equal(await cache.read(WS_A, "k", l.load, len), "v#1");
        // Kill this database's listening connection.
        await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = $1`,
          [LISTENER_NAME],
        );
        await eventually("the loss to be seen", () => db.listenEpoch() !== before);
        if (db.listenEpoch() === undefined) {
          // While it is down, every read goes to the database and nothing is kept.
          assert.equal(await cache.read(WS_A, "k", l.load, len), "v#2");
        }
        await eventually("the reconnect", () => db.listenEpoch() !== undefined);
        assert.notEqual(db.listenEpoch(), before);
        const fresh = await cache.read(WS_A, "k", l.load, len);
        assert.notEqual(fresh, "v#1", "what was cached before the loss is dropped");
        assert.equal(await cache.read(WS_A, "k", l.load, len), fresh, "and caching resumes");
        // Notifications arrive again on the new connection.
        await db.notify(RECORDS_CHANNEL, WS_A);
        await eventually("the notification after reconnecting", () => cache.size.entries === 0);
      } finally {
        await admin.end();
        await cache.close();
      }
    });
  }

  it("GET answers through the app are cached, and a write through the app is read back at once", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx);
    // The create's own notification arrives after its response; once a marker sent after it has
    // come back on the same listening connection, the cache has heard it too and will not drop
    // the answer cached next.
    const marker = `caught-up-${d.id}`;
    let heard = false;
    const unlisten = await ctx.db.listen(RECORDS_CHANNEL, (payload) => {
      if (payload === marker) heard = true;
    });
    await ctx.db.notify(RECORDS_CHANNEL, marker);
    await eventually("the notifications before the marker", () => heard).finally(unlisten);
    const get = () =>
      call<{ status: string; image_version: string | null }>(ctx, "GET", `/v2/deployments/${d.id}`);
    assert.equal((await get()).status, 200);
    // Behind the app's back, with triggers off (no notification): the cached answer stays.
    await ctx.db.transaction(async (tx) => {
      await tx.query(sql`SET LOCAL session_replication_role = replica`);
      await tx.query(sql`UPDATE deployments SET image_version = 'behind' WHERE id = ${d.id}`);
    });
    assert.notEqual((await get()).body.image_version, "behind", "served from the cache");
    // A write through the app: its answer and every later read show it.
    const patched = await call<{ image_version: string }>(ctx, "PATCH", `/v2/deployments/${d.id}`, {
      image_version: "9.9.9",
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal((await get()).body.image_version, "9.9.9");
    // A change made elsewhere (another process: the trigger notifies) shows once it is announced.
    await ctx.db.orm.execute(sql`UPDATE deployments SET image_version = 'elsewhere' WHERE id = ${d.id}`);
    await eventually(
      "the change made elsewhere",
      async () => (await get()).body.image_version === "elsewhere",
    );
    // The cache is per workspace: another workspace's key does not see it.
    const other = await call(ctx, "GET", `/v2/deployments/${d.id}`, undefined, { key: ctx.other.admin });
    assert.equal(other.status, 404);
    const list = await call<{ resources: { id: string }[] }>(
      ctx,
      "GET",
      "/v2/deployments?limit=100",
      undefined,
      {
        key: ctx.other.admin,
      },
    );
    assert.ok(!list.body.resources.some((r) => r.id === d.id));
    // /metrics reports it.
    const metrics = await ctx.app.inject({ method: "GET", url: "/metrics" });
    const hits = /slipway_read_cache_reads_total\{result="hit"\} (\d+)/.exec(metrics.body);
    assert.ok(hits && Number(hits[1]) >= 1, metrics.body);
    assert.match(metrics.body, /slipway_read_cache_size\{what="entries"\} \d+/);
  });
});
