import assert from "node:assert/strict";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import pg from "pg";
import { rows } from "../../src/db/client.ts";
import { AppDatabases, appDatabaseName } from "../../src/reconciler/app-database.ts";
import { TEST_DATABASE_URL } from "../helpers/databases.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import {
  deploymentRow,
  insertDeployment,
  logLines,
  makeReconciler,
  queueRevision,
  requestDelete,
  until,
} from "../helpers/reconciler.ts";
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

forEachDatabase(
  "per-deployment database",
  (suite) => {
    it("provisions a role and database, hands the app DATABASE_URI/POSTGRES_URI, and drops both on delete", async () => {
      const ctx = suite.ctx;
      const runtime = new ScriptedRuntime();
      const dep = await insertDeployment(ctx);
      const name = appDatabaseName(dep);
      const r = makeReconciler(ctx, runtime);
      await r.start();
      try {
        const rev = await queueRevision(ctx, dep);
        assert.equal(await waitForRevision(ctx.db, rev), "DEPLOYED");
        const d = await deploymentRow(ctx, dep);
        assert.equal(d?.status, "READY");
        assert.equal(d?.database_name, name);
        const env = runtime.specs.get(rev)?.env ?? {};
        const uri = env.DATABASE_URI;
        assert.ok(uri, "DATABASE_URI is set");
        assert.equal(env.POSTGRES_URI, uri);
        const parsed = new URL(uri);
        assert.equal(parsed.username, name);
        assert.equal(parsed.pathname, `/${name}`);

        // The app can use its database with those credentials.
        const app = new pg.Client({ connectionString: uri });
        await app.connect();
        await app.query("CREATE TABLE notes (body text)");
        await app.query("INSERT INTO notes VALUES ('hello')");
        assert.deepEqual((await app.query("SELECT body FROM notes")).rows, [{ body: "hello" }]);
        await app.end();

        // Stored encrypted; never in the logs.
        const [stored] = await rows<{ enc: string }>(
          ctx.db.orm,
          sql`SELECT database_password_enc AS enc FROM deployments WHERE id = ${dep}`,
        );
        assert.ok(stored?.enc.startsWith("sw1."));
        assert.ok(!stored?.enc.includes(parsed.password));
        const lines = await logLines(ctx, rev);
        assert.ok(lines.some((l) => l.startsWith("env DATABASE_URI=")));
        assert.ok(!lines.some((l) => l.includes(decodeURIComponent(parsed.password))), "password redacted");

        // A second revision gets the same database.
        const rev2 = await queueRevision(ctx, dep);
        assert.equal(await waitForRevision(ctx.db, rev2), "DEPLOYED");
        assert.equal(runtime.specs.get(rev2)?.env.DATABASE_URI, uri);

        await requestDelete(ctx, dep);
        await until("the row to go", async () => (await deploymentRow(ctx, dep)) === undefined);
        assert.deepEqual(await adminQuery("SELECT 1 FROM pg_database WHERE datname = $1", [name]), []);
        assert.deepEqual(await adminQuery("SELECT 1 FROM pg_roles WHERE rolname = $1", [name]), []);
      } finally {
        await r.stop();
      }
    });

    it("provisioning is idempotent (a retry after a crash finds what exists)", async () => {
      const ctx = suite.ctx;
      const dep = await insertDeployment(ctx);
      const dbs = new AppDatabases(TEST_DATABASE_URL, ctx.keyring);
      try {
        const a = await dbs.provision(ctx.db.orm, dep);
        const b = await dbs.provision(ctx.db.orm, dep);
        assert.equal(a.uri, b.uri);
        const c = new pg.Client({ connectionString: b.uri });
        await c.connect();
        await c.end();
      } finally {
        await dbs.drop(dep);
        await dbs.drop(dep);
      }
      assert.deepEqual(
        await adminQuery("SELECT 1 FROM pg_roles WHERE rolname = $1", [appDatabaseName(dep)]),
        [],
      );
    });
  },
  { env: { SLIPWAY_APPS_DATABASE_URL: TEST_DATABASE_URL } },
);
