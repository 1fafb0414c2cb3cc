import assert from "node:assert/strict";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import pg from "pg";
import { rows } from "../../src/db/client.ts";
import { AppDatabases, appDatabaseName } from "../../src/reconciler/app-database.ts";
import { TEST_DATABASE_URL } from "../helpers/databases.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { insertDeployment, logLines, makeReconciler, queueRevision, until } from "../helpers/reconciler.ts";
import { ScriptedRuntime } from "../helpers/scripted-runtime.ts";
import { waitForRevision } from "../helpers/wait.ts";

async function adminQuery<T>(text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end();
  }
}

/**
 * A revision queued with `resourceSpec`, in the same insert: the test's reconciler is running and
 * may claim it as soon as it is queued (setting it afterwards raced that claim).
 */
const queueWithSpec = (ctx: TestContext, dep: string, resourceSpec: Record<string, unknown> | null) =>
  queueRevision(ctx, dep, { resourceSpec });

/** The `deployment.storage_exceeded` events of a deployment, oldest first. */
async function storageEvents(ctx: TestContext, dep: string) {
  const found = await rows<{ body: string }>(
    ctx.db.orm,
    sql`SELECT body FROM events WHERE type = 'deployment.storage_exceeded' ORDER BY pk`,
  );
  return found
    .map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> })
    .filter((e) => e.data.deployment_id === dep);
}

/**
 * Drops a test's deployment and its database. The row goes too: the next test's reconciler would
 * otherwise activate that DEPLOYED revision again and make its database anew, after this test.
 */
async function forget(ctx: TestContext, dep: string): Promise<void> {
  await ctx.db.orm.execute(sql`DELETE FROM deployments WHERE id = ${dep}`);
  await new AppDatabases(TEST_DATABASE_URL, ctx.keyring).drop(dep);
}

const connLimit = async (name: string) =>
  (await adminQuery<{ l: number }>("SELECT rolconnlimit AS l FROM pg_roles WHERE rolname = $1", [name]))[0]
    ?.l;

forEachDatabase(
  "per-deployment database limits",
  (suite) => {
    it("db_max_connections is the role's CONNECTION LIMIT: the connection past it is refused, and a new revision changes it", async () => {
      const ctx = suite.ctx;
      const runtime = new ScriptedRuntime();
      const dep = await insertDeployment(ctx);
      const name = appDatabaseName(dep);
      const rev = await queueWithSpec(ctx, dep, { db_max_connections: 2 });
      const r = makeReconciler(ctx, runtime);
      await r.start();
      const open: pg.Client[] = [];
      try {
        assert.equal(await waitForRevision(ctx.db, rev), "DEPLOYED");
        assert.equal(await connLimit(name), 2);
        const uri = runtime.specs.get(rev)?.env.DATABASE_URI ?? "";
        for (let i = 0; i < 2; i++) {
          const c = new pg.Client({ connectionString: uri });
          c.on("error", () => {});
          await c.connect();
          open.push(c);
        }
        const third = new pg.Client({ connectionString: uri });
        third.on("error", () => {});
        await assert.rejects(third.connect(), /too many connections for role/);

        const rev2 = await queueWithSpec(ctx, dep, { db_max_connections: 3 });
        assert.equal(await waitForRevision(ctx.db, rev2), "DEPLOYED");
        assert.equal(await connLimit(name), 3);
        const rev3 = await queueWithSpec(ctx, dep, null);
        assert.equal(await waitForRevision(ctx.db, rev3), "DEPLOYED");
        assert.equal(await connLimit(name), -1, "no db_max_connections: no limit");
      } finally {
        await Promise.all(open.map((c) => c.end().catch(() => {})));
        await r.stop();
        await forget(ctx, dep);
      }
    });

    it("db_storage_gi: a database over it is reported once in the deploy log and as an event, and noted on the deployment; each crossing once", async () => {
      const ctx = suite.ctx;
      const runtime = new ScriptedRuntime();
      const dep = await insertDeployment(ctx);
      // 0 GiB: any database, even an empty one, is over it.
      const rev = await queueWithSpec(ctx, dep, { db_storage_gi: 0 });
      const r = makeReconciler(ctx, runtime);
      await r.start();
      try {
        assert.equal(await waitForRevision(ctx.db, rev), "DEPLOYED");
        await until("the storage warning", async () =>
          (await logLines(ctx, rev, "deploy")).some((l) => l.includes("over its db_storage_gi of 0 GiB")),
        );
        const [row] = await rows<{ note: string | null }>(
          ctx.db.orm,
          sql`SELECT storage_note AS note FROM deployments WHERE id = ${dep}`,
        );
        assert.match(row?.note ?? "", /^its database uses \d+\.\d{3} GiB, over its db_storage_gi of 0 GiB$/);
        // Polls go on; the crossing is reported once.
        await new Promise((resolve) => setTimeout(resolve, 300));
        const warnings = (await logLines(ctx, rev, "deploy")).filter((l) => l.includes("db_storage_gi"));
        assert.equal(warnings.length, 1);

        // The crossing is also an event, once, with the size and the limit in bytes.
        const first = await storageEvents(ctx, dep);
        assert.equal(first.length, 1);
        assert.deepEqual(Object.keys(first[0]?.data ?? {}).sort(), [
          "deployment_id",
          "deployment_name",
          "limit_bytes",
          "size_bytes",
          "tenant_id",
        ]);
        assert.equal(first[0]?.data.deployment_id, dep);
        assert.equal(first[0]?.data.tenant_id, ctx.workspaceId);
        assert.equal(first[0]?.data.limit_bytes, 0);
        assert.ok(Number(first[0]?.data.size_bytes) > 0);

        // Within it again (1 GiB): a log line and no event; over it again: a second event.
        const within = await queueWithSpec(ctx, dep, { db_storage_gi: 1 });
        assert.equal(await waitForRevision(ctx.db, within), "DEPLOYED");
        await until("the within-again line", async () =>
          (await logLines(ctx, within, "deploy")).some((l) => l.includes("within its db_storage_gi again")),
        );
        assert.equal((await storageEvents(ctx, dep)).length, 1);
        const over = await queueWithSpec(ctx, dep, { db_storage_gi: 0 });
        assert.equal(await waitForRevision(ctx.db, over), "DEPLOYED");
        await until("a second event", async () => (await storageEvents(ctx, dep)).length === 2);
        // The line is written after the check's transaction, which emitted the event, commits.
        await until("the over line in the new revision's log", async () =>
          (await logLines(ctx, over, "deploy")).some((l) => l.includes("over its db_storage_gi of 0 GiB")),
        );
      } finally {
        await r.stop();
        await forget(ctx, dep);
      }
    });
  },
  { env: { SLIPWAY_APPS_DATABASE_URL: TEST_DATABASE_URL } },
);
