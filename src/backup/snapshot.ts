import type { Writable } from "node:stream";
import { sql } from "drizzle-orm";
import { type Database, type Executor, rows } from "../db/client.ts";
import { appliedMigrations, sequencesOf, type TableShape, tablesOf } from "./catalog.ts";
import { type BackupEnd, BackupWriter, FORMAT } from "./format.ts";

export interface SnapshotInfo {
  slipwayVersion: string;
  masterKeyId: string;
}

export interface SnapshotResult extends BackupEnd {
  /**
   * How long the snapshot's transaction was open. On PGlite (one session) every other statement
   * waits that long: the write pause docs/operations.md reports.
   */
  transactionMs: number;
}

/** Rows read per FETCH: fewer for tables with bytea columns (a 1 MiB upload chunk a row). */
const BATCH = 2000;
const WIDE_BATCH = 4;

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

async function dumpTable(exec: Executor, writer: BackupWriter, t: TableShape, cursor: string): Promise<void> {
  await writer.line(["t", t.name, t.columns]);
  const strip =
    t.generated.length === 0
      ? ""
      : ` - ARRAY[${t.generated.map((g) => `'${g.replaceAll("'", "''")}'`).join(", ")}]::text[]`;
  // Each row's whole line is made by the database: no parse and stringify of every row here.
  await exec.execute(
    sql.raw(
      `DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT '["r",' || (to_jsonb(x)${strip})::text || ']' AS l FROM ${quote(t.name)} x`,
    ),
  );
  const size = t.wide ? WIDE_BATCH : BATCH;
  for (;;) {
    const batch = await rows<{ l: string }>(exec, sql.raw(`FETCH ${size} FROM ${cursor}`));
    await writer.rowLines(batch.map((b) => b.l));
    if (batch.length < size) break;
  }
  // Left open: the transaction's end closes it, one statement less per table.
}

/**
 * Writes a consistent backup of the whole database to `out` while writes go on: one REPEATABLE READ
 * transaction sees every table as of one moment (PostgreSQL's snapshot; PGlite has one session,
 * so its writers wait until the transaction ends). Sealed values are copied sealed.
 */
export async function takeSnapshot(db: Database, info: SnapshotInfo, out: Writable): Promise<SnapshotResult> {
  // The schema changes only when migrations run (at a start, under their lock): read before the
  // transaction, it keeps the catalog's slow queries out of PGlite's pause.
  const tables = await tablesOf(db.orm);
  const sequences = await sequencesOf(db.orm);
  let transactionMs = 0;
  let writer: BackupWriter | undefined;
  try {
    await db.transaction(async (tx) => {
      const opened = performance.now();
      await tx.orm.execute(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`);
      const migrations = await appliedMigrations(tx.orm);
      writer = new BackupWriter(out, {
        slipway_backup: FORMAT,
        slipway_version: info.slipwayVersion,
        database: db.kind,
        schema_version: migrations.at(-1) ?? "",
        migrations,
        master_key_id: info.masterKeyId,
        taken_at: new Date().toISOString(),
      });
      for (const [i, t] of tables.entries()) await dumpTable(tx.orm, writer, t, `slipway_backup_${i}`);
      for (const s of sequences) {
        const [v] = await rows<{ last_value: string; is_called: boolean }>(
          tx.orm,
          sql.raw(`SELECT last_value::text AS last_value, is_called FROM ${quote(s)}`),
        );
        if (v) await writer.line(["s", s, v.last_value, v.is_called]);
      }
      transactionMs = performance.now() - opened;
    });
  } catch (err) {
    writer?.abort(err as Error);
    throw err;
  }
  if (!writer) throw new Error("the backup transaction wrote nothing");
  return { ...(await writer.end()), transactionMs };
}
