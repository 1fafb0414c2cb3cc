import { type SQL, sql } from "drizzle-orm";

/** The levels of the hosted service's log API; `level` in a query is one of these (any case). */
export const LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/*
 * The store keeps raw lines (stdout and stderr are not told apart), so a line's level is derived
 * from its text, in SQL so that a level filter pages correctly. In order:
 *   1. a leading level word ("ERROR: …", "[warn] …", "info …"): that level (warn → WARNING,
 *      fatal → CRITICAL);
 *   2. an error word anywhere (…Error, error, ERR!, fatal, panic, traceback, …Exception, …_FAILED): ERROR;
 *   3. a warning word anywhere (warn, warning, deprecated, fault): WARNING;
 *   4. otherwise INFO.
 * `\m`/`\M` are PostgreSQL's start/end of word; `~*` is case-insensitive.
 */
const LEADING: [string, LogLevel][] = [
  ["^\\W*debug\\M", "DEBUG"],
  ["^\\W*info\\M", "INFO"],
  ["^\\W*warn(ing)?\\M", "WARNING"],
  ["^\\W*(critical|fatal)\\M", "CRITICAL"],
  ["^\\W*error\\M", "ERROR"],
];
const ERROR_WORDS = "error\\M|\\merr!|\\mfatal\\M|\\mpanic\\M|\\mtraceback\\M|exception\\M|_failed\\M";
const WARNING_WORDS = "\\mwarn(ing)?\\M|\\mdeprecated\\M|\\mfault\\M";

/** The level of the line in column `line` (the one rule; the API and its filter both use it). */
export function levelOf(line: SQL): SQL {
  const leading = LEADING.map(([pattern, level]) => sql`WHEN ${line} ~* ${pattern} THEN ${level}`);
  return sql`(CASE ${sql.join(leading, sql` `)}
    WHEN ${line} ~* ${ERROR_WORDS} THEN 'ERROR'
    WHEN ${line} ~* ${WARNING_WORDS} THEN 'WARNING'
    ELSE 'INFO' END)`;
}
