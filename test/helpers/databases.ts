import { randomBytes } from "node:crypto";
import pg from "pg";
import { type Database, openDatabase } from "../../src/db/client.ts";
import { migrate } from "../../src/db/migrate.ts";

export type DbKind = "pglite" | "postgres";

/** The server every PostgreSQL suite makes its own database on. */
export const TEST_DATABASE_URL =
  process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";

async function postgresReachable(timeoutMs: number): Promise<boolean> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

const required = process.env.CI === "true" || process.env.TEST_REQUIRE_POSTGRES === "1";
// Where PostgreSQL is required, a server slow to answer (many suites starting at once on a loaded
// machine) gets three tries of 10 s before the file fails; elsewhere one short try decides.
let reachable = await postgresReachable(required ? 10_000 : 2000);
for (let i = 0; !reachable && required && i < 2; i++) {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  reachable = await postgresReachable(10_000);
}
if (!reachable && required) {
  throw new Error(`PostgreSQL is required for the tests (CI) but ${TEST_DATABASE_URL} is unreachable.`);
}
if (!reachable) {
  console.warn(
    `# PostgreSQL at ${TEST_DATABASE_URL} is unreachable: running the PGlite half of the suites only.`,
  );
}

/** Every suite runs once per database kind listed here. */
export const DB_KINDS: DbKind[] = reachable ? ["pglite", "postgres"] : ["pglite"];

export interface TestDatabase {
  db: Database;
  /** postgres:// URL of this database (postgres kind only): for child processes that share it. */
  url?: string;
  drop(): Promise<void>;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A fresh, migrated database: a new in-memory PGlite, or a new database on the server. */
export async function createTestDatabase(kind: DbKind): Promise<TestDatabase> {
  if (kind === "pglite") {
    const db = await openDatabase({ kind: "pglite-memory" });
    await migrate(db);
    return { db, drop: () => db.close() };
  }
  const name = `slipway_t_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = withDatabase(TEST_DATABASE_URL, name);
  const db = await openDatabase({ kind: "postgres", url }, { poolSize: 20 });
  await migrate(db);
  return {
    db,
    url,
    drop: async () => {
      await db.close();
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
