import { sql } from "drizzle-orm";
import type { DatabaseTarget } from "../config.ts";
import { type KeySettings, keyFilePath } from "../crypto/master-key.ts";
import { type Database, type Executor, openDatabase, rows } from "../db/client.ts";
import { listMigrations, migrate } from "../db/migrate.ts";
import { tablesOf } from "./catalog.ts";
import { type BackupHeader, type BackupLine, readBackup, verifyBackup } from "./format.ts";
import { configuredKeyIds } from "./keys.ts";

/** A restore that was not done, and why, in a sentence; nothing was written. */
export class RestoreRefused extends Error {}

export interface RestoreOptions {
  database: DatabaseTarget;
  keys: KeySettings;
  /** Empty a target that holds data first (`slipway restore --force`). */
  force: boolean;
}

export interface RestoreReport {
  header: BackupHeader;
  rows: number;
  tables: number;
  /** Migrations of this Slipway newer than the backup, applied after the load. */
  migrated: string[];
}

/** Rows inserted per statement (fewer when they are large: a batch stops at ~8 MB of JSON). */
const BATCH_ROWS = 500;
const BATCH_BYTES = 8 * 1024 * 1024;

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

function checkKeys(keys: KeySettings, needed: string[], header: BackupHeader): void {
  const have = configuredKeyIds(keys);
  const missing = needed.filter((kid) => !have.includes(kid));
  if (missing.length === 0) return;
  const where = keys.masterKey
    ? "SLIPWAY_MASTER_KEY (older keys in SLIPWAY_PREVIOUS_MASTER_KEYS)"
    : `SLIPWAY_MASTER_KEY, or the key file ${keyFilePath(keys.dataDir)}`;
  throw new RestoreRefused(
    `This backup's secrets are sealed with master key ${missing.join(" and ")}` +
      `${header.master_key_id === missing[0] ? "" : ` (its server's active key was ${header.master_key_id})`}, ` +
      `but the key${have.length === 1 ? "" : "s"} configured here ${have.length === 0 ? "are none" : `${have.length === 1 ? "is" : "are"} ${have.join(", ")}`}. ` +
      `Put key ${missing[0]} in ${where} and restore again. Nothing was written.`,
  );
}

/** Tables of the target that hold rows (the migration ledger aside). */
async function tablesWithRows(exec: Executor): Promise<string[]> {
  const found: string[] = [];
  for (const t of await tablesOf(exec)) {
    const [r] = await rows<{ any: boolean }>(
      exec,
      sql.raw(`SELECT EXISTS (SELECT 1 FROM ${quote(t.name)}) AS any`),
    );
    if (r?.any) found.push(t.name);
  }
  return found;
}

async function emptyTarget(db: Database, force: boolean): Promise<void> {
  const full = await tablesWithRows(db.orm);
  if (full.length === 0) return;
  if (!force) {
    throw new RestoreRefused(
      `The target database is not empty (${full.slice(0, 5).join(", ")}${full.length > 5 ? ", …" : ""} hold rows). ` +
        "Restore into an empty data dir or database, or pass --force to replace what it holds. Nothing was written.",
    );
  }
  await dropSchema(db);
}

/** Everything goes, the migration ledger too: the backup's own schema is built again after. */
async function dropSchema(db: Database): Promise<void> {
  await db.exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
}

/** Migrations the (empty) target has that the backup has not: its schema is made again from the backup's. */
async function newerThan(db: Database, theirs: Set<string>): Promise<boolean> {
  const [ledger] = await rows<{ exists: boolean }>(
    db.orm,
    sql`SELECT to_regclass('public.schema_migrations') IS NOT NULL AS exists`,
  );
  if (!ledger?.exists) return false;
  const applied = await rows<{ name: string }>(db.orm, sql`SELECT name FROM schema_migrations`);
  return applied.some((m) => !theirs.has(m.name));
}

async function insertBatch(exec: Executor, table: string, columns: string[], batch: string[]): Promise<void> {
  const cols = columns.map(quote).join(", ");
  await exec.execute(
    sql`${sql.raw(`INSERT INTO ${quote(table)} (${cols}) SELECT ${cols} FROM jsonb_populate_recordset(NULL::${quote(table)}, `)}${`[${batch.join(",")}]`}::jsonb)`,
  );
}

/** Loads every line of the (verified) file in one transaction, foreign keys and triggers aside. */
async function load(db: Database, file: string): Promise<{ rows: number; tables: number }> {
  let count = 0;
  let tables = 0;
  await db.transaction(async (tx) => {
    try {
      // Rows go in table by table, and tables refer to each other both ways (deployments and
      // revisions): foreign key triggers (and the notify triggers) wait, as pg_restore does.
      await tx.orm.execute(sql`SET LOCAL session_replication_role = replica`);
    } catch (err) {
      throw new RestoreRefused(
        `Restoring needs a database role that may set session_replication_role (a superuser, or the owner on a managed service that allows it): ${(err as Error).message}. No rows were written.`,
      );
    }
    let table: { name: string; columns: string[] } | undefined;
    let batch: string[] = [];
    let bytes = 0;
    const flush = async () => {
      if (table && batch.length > 0) await insertBatch(tx.orm, table.name, table.columns, batch);
      batch = [];
      bytes = 0;
    };
    for await (const item of readBackup(file)) {
      if (!("line" in item)) continue;
      const line: BackupLine = item.line;
      if (line[0] === "t") {
        await flush();
        table = { name: line[1], columns: line[2] };
        tables++;
      } else if (line[0] === "r") {
        const json = JSON.stringify(line[1]);
        batch.push(json);
        bytes += json.length;
        count++;
        if (batch.length >= BATCH_ROWS || bytes >= BATCH_BYTES) await flush();
      } else {
        await flush();
        await tx.orm.execute(sql`SELECT setval(${line[1]}::regclass, ${line[2]}::bigint, ${line[3]})`);
      }
    }
    await flush();
  });
  return { rows: count, tables };
}

/**
 * Restores a backup file into an empty database (or an emptied one, with `force`), offline. The
 * whole file is read and its checksum checked, and the master keys its secrets need looked for,
 * before anything is written; the load is one transaction. The database gets the backup's
 * schema version first, then the rows, then this Slipway's newer migrations.
 */
export async function restoreBackup(file: string, o: RestoreOptions): Promise<RestoreReport> {
  const { header, end } = await verifyBackup(file);
  checkKeys(o.keys, end.key_ids, header);
  const known = listMigrations();
  const names = new Set(known.map((m) => m.name));
  const unknown = header.migrations.filter((m) => !names.has(m));
  if (unknown.length > 0) {
    throw new RestoreRefused(
      `This backup is from a newer Slipway (${header.slipway_version}, migration ${unknown.at(-1)}); restore it with that version or a later one. Nothing was written.`,
    );
  }
  const db = await openDatabase(o.database, { poolSize: 2 });
  try {
    await emptyTarget(db, o.force);
    const theirs = new Set(header.migrations);
    if (await newerThan(db, theirs)) await dropSchema(db);
    await migrate(
      db,
      known.filter((m) => theirs.has(m.name)),
    );
    const loaded = await load(db, file);
    if (loaded.rows !== end.rows) {
      throw new Error(`restore loaded ${loaded.rows} rows where the backup holds ${end.rows}`);
    }
    const migrated = await migrate(db);
    return { header, rows: loaded.rows, tables: loaded.tables, migrated };
  } finally {
    await db.close();
  }
}
