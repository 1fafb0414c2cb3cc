import { sql } from "drizzle-orm";
import { type Executor, rows } from "../db/client.ts";

/**
 * What a backup holds, read from the database's own catalog rather than listed by hand, so a table
 * a later migration adds is in every backup without a change here: every table of the public
 * schema but the migration ledger (whose content the header carries), each with its columns but
 * the generated ones (computed again on restore), and every sequence.
 */
export interface TableShape {
  name: string;
  columns: string[];
  /** Its generated columns: left out of the backup. */
  generated: string[];
  /** A bytea column makes rows large (upload chunks): they are read a few at a time. */
  wide: boolean;
}

export const LEDGER = "schema_migrations";

export async function tablesOf(exec: Executor): Promise<TableShape[]> {
  // pg_catalog, not information_schema: a tenth of the time on PGlite, where writers wait.
  const cols = await rows<{ table_name: string; column_name: string; data_type: string; generated: boolean }>(
    exec,
    sql`SELECT c.relname AS table_name, a.attname AS column_name, t.typname AS data_type,
               a.attgenerated <> '' AS generated
          FROM pg_class c
          JOIN pg_namespace n ON n.oid = c.relnamespace
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
          JOIN pg_type t ON t.oid = a.atttypid
         WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname <> ${LEDGER}
         ORDER BY c.relname, a.attnum`,
  );
  const tables = new Map<string, TableShape>();
  for (const c of cols) {
    let t = tables.get(c.table_name);
    if (!t) {
      t = { name: c.table_name, columns: [], generated: [], wide: false };
      tables.set(c.table_name, t);
    }
    if (c.generated) {
      t.generated.push(c.column_name);
      continue;
    }
    t.columns.push(c.column_name);
    if (c.data_type === "bytea") t.wide = true;
  }
  return [...tables.values()];
}

export async function sequencesOf(exec: Executor): Promise<string[]> {
  const found = await rows<{ name: string }>(
    exec,
    sql`SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind = 'S' ORDER BY 1`,
  );
  return found.map((s) => s.name);
}

export async function appliedMigrations(exec: Executor): Promise<string[]> {
  const done = await rows<{ name: string }>(exec, sql`SELECT name FROM schema_migrations ORDER BY name`);
  return done.map((m) => m.name);
}
