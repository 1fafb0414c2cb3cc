import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { MIGRATION_LOCK } from "./channels.ts";
import { type Database, rows } from "./client.ts";

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), "migrations");
/** Advisory-lock key for migrations: two processes starting at once apply them one after the other. */

export interface Migration {
  name: string;
  sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((name) => ({ name, sql: readFileSync(join(dir, name), "utf8") }));
}

/** Applies pending migrations, each in its own transaction, under an advisory lock. Returns the names applied. */
export async function migrate(db: Database, migrations = listMigrations()): Promise<string[]> {
  return db.withAdvisoryLock(MIGRATION_LOCK, async (conn) => {
    await conn.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
    );
    const done = await conn.query<{ name: string }>("SELECT name FROM schema_migrations");
    const applied = new Set(done.map((r) => r.name));
    const ran: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.name)) continue;
      try {
        await conn.exec(
          `BEGIN;\n${m.sql}\n;\nINSERT INTO schema_migrations (name) VALUES ('${m.name}');\nCOMMIT;`,
        );
      } catch (err) {
        await conn.exec("ROLLBACK").catch(() => {});
        throw new Error(`migration ${m.name} failed: ${(err as Error).message}`);
      }
      ran.push(m.name);
    }
    return ran;
  });
}

/** What `slipway migrate --check` reports: migrations to apply, and applied ones this code does not know. */
export interface MigrationCheck {
  pending: string[];
  /** Applied by a newer release (its code runs on this database: expand/contract, docs/operations.md). */
  unknown: string[];
}

/** Compares the database's ledger with this code's migrations; writes nothing (no ledger is made). */
export async function checkMigrations(db: Database, migrations = listMigrations()): Promise<MigrationCheck> {
  const [ledger] = await rows<{ present: boolean }>(
    db.orm,
    sql`SELECT to_regclass('public.schema_migrations') IS NOT NULL AS present`,
  );
  const applied = ledger?.present
    ? (await rows<{ name: string }>(db.orm, sql`SELECT name FROM schema_migrations`)).map((r) => r.name)
    : [];
  const done = new Set(applied);
  const known = new Set(migrations.map((m) => m.name));
  return {
    pending: migrations.map((m) => m.name).filter((n) => !done.has(n)),
    unknown: applied.filter((n) => !known.has(n)).sort(),
  };
}
