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
const BATCH = 500;
const WIDE_BATCH = 4;

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

async function dumpTable(exec: Executor, writer: BackupWriter, t: TableShape): Promise<void> {
  await writer.line(["t", t.name, t.columns]);
  const strip =
    t.generated.length === 0
      ? ""
      : ` - ARRAY[${t.generated.map((g) => `'${g.replaceAll("'", "''")}'`).join(", ")}]::text[]`;
  await exec.execute(
    sql.raw(
      `DECLARE slipway_backup NO SCROLL CURSOR FOR SELECT to_jsonb(x)${strip} AS r FROM ${quote(t.name)} x`,
    ),
  );
  const size = t.wide ? WIDE_BATCH : BATCH;
  for (;;) {
    const batch = await rows<{ r: Record<string, unknown> | string }>(
      exec,
      sql.raw(`FETCH ${size} FROM slipway_backup`),
    );
    for (const row of batch) await writer.line(["r", typeof row.r === "string" ? JSON.parse(row.r) : row.r]);
    if (batch.length < size) break;
  }
  await exec.execute(sql.raw("CLOSE slipway_backup"));
}

/**
 * Writes a consistent backup of the whole database to `out` while writes go on: one REPEATABLE READ
 * transaction sees every table as of one moment (PostgreSQL's snapshot; PGlite has one session,
 * so its writers wait until the transaction ends). Sealed values are copied sealed.
 */
export async function takeSnapshot(db: Database, info: SnapshotInfo, out: Writable): Promise<SnapshotResult> {
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
        migrations,
        master_key_id: info.masterKeyId,
        taken_at: new Date().toISOString(),
      });
      for (const t of await tablesOf(tx.orm)) await dumpTable(tx.orm, writer, t);
      for (const s of await sequencesOf(tx.orm)) {
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
