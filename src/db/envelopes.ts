import { type SQL, sql } from "drizzle-orm";
import { getTableConfig, type PgColumn, type PgTable } from "drizzle-orm/pg-core";
import type { EnvelopeColumn, StaleEnvelope } from "../crypto/rotate.ts";
import { type Executor, rows } from "./client.ts";

/**
 * An envelope column of a table keyed by a uuid `id`, as key rotation (crypto/rotate.ts) walks it.
 * Each store declares its own encrypted columns through this, so no module outside a table's store
 * names that table in SQL. `contextId` is the SQL expression over the row that its values'
 * encryption context names, when that is not the row id.
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
