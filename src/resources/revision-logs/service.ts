import { sql } from "drizzle-orm";
import { type Executor, rows } from "../../db/client.ts";
import { notFound } from "../../http/errors.ts";
import type { RevisionStatus } from "../revisions/states.ts";
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

interface Row {
  id: string;
  at: Date | string;
  line: string;
  stream: "build" | "deploy";
}

const toLine = (r: Row): LogLine => ({
  at: new Date(r.at).toISOString(),
  line: r.line,
  stream: r.stream,
});

const streamFilter = (type: LogsQuery["type"]) => (type ? sql`AND stream = ${type}` : sql``);

/** Stored lines, oldest first: a page by offset, optionally only those after `since`. */
export async function listLogs(exec: Executor, revisionId: string, q: LogsQuery): Promise<LogLine[]> {
  const found = await rows<Row>(
    exec,
    sql`SELECT id::text AS id, at, line, stream FROM revision_logs
         WHERE revision_id = ${revisionId} ${streamFilter(q.type)}
           ${q.since ? sql`AND at > ${q.since}::timestamptz` : sql``}
         ORDER BY id LIMIT ${q.limit} OFFSET ${q.offset}`,
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
  const found = await rows<Row>(
    exec,
    sql`SELECT id::text AS id, at, line, stream FROM revision_logs
         WHERE revision_id = ${revisionId} ${streamFilter(type)} AND id > ${afterId}::bigint
         ORDER BY id LIMIT ${limit}`,
  );
  return found.map((r) => ({ id: r.id, ...toLine(r) }));
}
