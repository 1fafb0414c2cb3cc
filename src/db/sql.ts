import { sql } from "drizzle-orm";

/** Small SQL fragments every store uses, so each is written once. */

/** Timestamps as ISO 8601 text in SQL, so both drivers hand back the same strings. */
export const isoSql = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A list of bound values, for `IN (…)`. */
export function sqlList(values: readonly string[]) {
  return sql.join(
    values.map((v) => sql`${v}`),
    sql`, `,
  );
}

/** A list of uuids, for `id IN (…)` (typed, so PGlite compares them as uuids). */
export function uuidList(ids: readonly string[]) {
  return sql.join(
    ids.map((id) => sql`${id}::uuid`),
    sql`, `,
  );
}

/** now() plus `ms` milliseconds: a lease's or a back-off's end. */
export const fromNow = (ms: number) => sql`(now() + ${Math.round(ms)}::int * interval '1 millisecond')`;

/** LIKE metacharacters in a user's text match themselves. */
export const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
