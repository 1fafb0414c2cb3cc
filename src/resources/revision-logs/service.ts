import { type SQL, sql } from "drizzle-orm";
import { type Executor, rows } from "../../db/client.ts";
import { notFound } from "../../http/errors.ts";
import type { RevisionStatus } from "../../reconciler/states.ts";
import type { LogStream } from "../../runtimes/interface.ts";
import { likeEscape } from "../deployments/list.ts";
import { type LogLevel, levelOf } from "./levels.ts";
import type { LogLine, LogsQuery } from "./schema.ts";

/** The revision's status, when the revision belongs to that deployment of that workspace; else 404. */
export async function revisionStatus(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionStatus> {
  const [row] = await rows<{ status: RevisionStatus }>(
    exec,
    sql`SELECT r.status FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE r.id = ${revisionId} AND d.id = ${deploymentId} AND d.workspace_id = ${workspaceId}`,
  );
  if (!row) throw notFound("Revision not found.");
  return row.status;
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
export async function queryLogs(exec: Executor, scope: LogScope, f: LogFilter): Promise<StoredLine[]> {
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

const toLine = (r: StoredLine): LogLine => ({ at: r.at.toISOString(), line: r.line, stream: r.stream });

/** Stored lines, oldest first: a page by offset, optionally only those after `since`. */
export async function listLogs(exec: Executor, revisionId: string, q: LogsQuery): Promise<LogLine[]> {
  const found = await queryLogs(
    exec,
    { revisionId },
    { stream: q.type, limit: q.limit, skip: q.offset, since: q.since },
  );
  return found.map(toLine);
}

/** Lines stored after the line with id `afterId` (for following live). */
export async function logsAfter(
  exec: Executor,
  revisionId: string,
  type: LogsQuery["type"],
  afterId: string,
  limit: number,
): Promise<(LogLine & { id: string })[]> {
  const found = await queryLogs(exec, { revisionId }, { stream: type, afterId, limit });
  return found.map((r) => ({ id: r.id, ...toLine(r) }));
}
