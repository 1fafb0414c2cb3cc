import { type SQL, sql } from "drizzle-orm";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { likeEscape } from "../../db/sql.ts";
import { type LogLevel, levelOf } from "./levels.ts";

/** The two logs of a revision: its build, and its deploy (the app's own output included). */
export type LogStream = "build" | "deploy";

/** The only module that writes SQL on `revision_logs` (the reconciler's log sink calls it), and its reads. */

export interface NewLogLine {
  stream: LogStream;
  at: string;
  line: string;
}

/** Appends a batch of one revision's lines, then drops the oldest beyond `cap` per stream. */
export async function appendLogLines(
  exec: Executor,
  revisionId: string,
  batch: readonly NewLogLine[],
  cap: number,
): Promise<void> {
  await exec.execute(
    sql`INSERT INTO revision_logs (revision_id, stream, at, line)
        SELECT ${revisionId}::uuid, t.stream, t.at, t.line
          FROM jsonb_to_recordset(${JSON.stringify(batch)}::jsonb) AS t(stream text, at timestamptz, line text)`,
  );
  for (const stream of new Set(batch.map((b) => b.stream))) {
    await exec.execute(
      sql`DELETE FROM revision_logs
           WHERE revision_id = ${revisionId}::uuid AND stream = ${stream}
             AND id <= (SELECT id FROM revision_logs WHERE revision_id = ${revisionId}::uuid AND stream = ${stream}
                         ORDER BY id DESC OFFSET ${cap} LIMIT 1)`,
    );
  }
}

/** Whose lines: one revision's, or those of every revision of a deployment. */
export type LogScope = { revisionId: string } | { deploymentId: string };

/** Which stored lines, in which order. Every field narrows; none given means all lines, oldest first. */
export interface LogFilter {
  stream?: LogStream;
  /** By line id, which is the order lines were stored in (across revisions too). */
  order?: "asc" | "desc";
  limit: number;
  /** Lines to skip (positional paging). */
  skip?: number;
  /** Only lines past the line with this id, in `order` (cursor paging). */
  afterId?: string;
  level?: LogLevel;
  /** Case-insensitive substring of the line. */
  text?: string;
  /** Only lines stored strictly after this time. */
  since?: string;
  /** Only lines stored at or after / at or before these times (ISO 8601). */
  start?: string;
  end?: string;
}

export interface StoredLine {
  id: string;
  at: Date;
  line: string;
  stream: LogStream;
  level: LogLevel;
}

interface Row {
  id: string;
  at: Date | string;
  line: string;
  stream: LogStream;
  level: LogLevel;
}

const LEVEL = levelOf(sql`l.line`);

/** The one query over stored lines: the GET log, the follow stream and the search bodies use it. */
export async function queryLogs(exec: Reader, scope: LogScope, f: LogFilter): Promise<StoredLine[]> {
  const where: SQL[] =
    "revisionId" in scope
      ? [sql`l.revision_id = ${scope.revisionId}`]
      : [sql`l.revision_id IN (SELECT id FROM revisions WHERE deployment_id = ${scope.deploymentId})`];
  const desc = f.order === "desc";
  if (f.stream) where.push(sql`l.stream = ${f.stream}`);
  if (f.afterId) where.push(desc ? sql`l.id < ${f.afterId}::bigint` : sql`l.id > ${f.afterId}::bigint`);
  if (f.level) where.push(sql`${LEVEL} = ${f.level}`);
  if (f.text) where.push(sql`l.line ILIKE '%' || ${likeEscape(f.text)} || '%'`);
  if (f.since) where.push(sql`l.at > ${f.since}::timestamptz`);
  if (f.start) where.push(sql`l.at >= ${f.start}::timestamptz`);
  if (f.end) where.push(sql`l.at <= ${f.end}::timestamptz`);
  const found = await rows<Row>(
    exec,
    sql`SELECT l.id::text AS id, l.at, l.line, l.stream, ${LEVEL} AS level FROM revision_logs l
         WHERE ${sql.join(where, sql` AND `)}
         ORDER BY l.id ${desc ? sql`DESC` : sql`ASC`} LIMIT ${f.limit} OFFSET ${f.skip ?? 0}`,
  );
  return found.map((r) => ({ ...r, at: new Date(r.at) }));
}

/** The id of the last line of a revision stored at or before `at` ("0" when none): where a follow starts. */
export async function lastLineIdAt(exec: Reader, revisionId: string, at: string): Promise<string> {
  const [row] = await rows<{ id: string | null }>(
    exec,
    sql`SELECT max(id)::text AS id FROM revision_logs WHERE revision_id = ${revisionId} AND at <= ${at}::timestamptz`,
  );
  return row?.id ?? "0";
}
