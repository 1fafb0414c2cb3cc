import { type SQL, sql } from "drizzle-orm";
import { getTableConfig, type PgColumn, type PgTable } from "drizzle-orm/pg-core";
import { type Executor, rows } from "./client.ts";

/**
 * One column of stored envelopes (crypto/envelope.ts), as key rotation walks it. Each store
 * declares its own encrypted columns through `envelopeColumn`, so no module outside a table's
 * store names that table in SQL; rotation only asks for stale values and swaps them.
 */
export interface EnvelopeColumn {
  /** SQL names, for the encryption context and rotation's report. */
  readonly table: string;
  readonly column: string;
  /** Up to `limit` non-null values not starting with `current`, with ids after `after`, in id order. */
  stale(current: string, after: string, limit: number): Promise<StaleEnvelope[]>;
  /** Writes `next` where the row still holds `current` (a concurrent write wins); whether it did. */
  swap(id: string, current: string, next: string): Promise<boolean>;
}

export interface StaleEnvelope {
  id: string;
  /** The id its encryption context names (crypto/envelope.ts `encryptionContext`). */
  contextId: string;
  value: string;
}

/**
 * An envelope column of a table keyed by a uuid `id`. `contextId` is the SQL expression over the
 * row that its values' encryption context names, when that is not the row id.
 */
export function envelopeColumn(
  exec: Executor,
  table: PgTable & { id: PgColumn },
  column: PgColumn,
  contextId: SQL = sql`${table.id}::text`,
): EnvelopeColumn {
  const name = getTableConfig(table).name;
  return {
    table: name,
    column: column.name,
    stale: (current, after, limit) =>
      rows<StaleEnvelope>(
        exec,
        sql`SELECT ${table.id}::text AS id, ${contextId} AS "contextId", ${column} AS value FROM ${table}
            WHERE ${column} IS NOT NULL AND ${column} NOT LIKE ${`${current}%`} AND ${table.id} > ${after}::uuid
            ORDER BY ${table.id} LIMIT ${limit}`,
      ),
    swap: async (id, current, next) => {
      const done = await rows<{ id: string }>(
        exec,
        sql`UPDATE ${table} SET ${sql.identifier(column.name)} = ${next}
            WHERE ${table.id} = ${id}::uuid AND ${column} = ${current} RETURNING ${table.id}`,
      );
      return done.length > 0;
    },
  };
}
