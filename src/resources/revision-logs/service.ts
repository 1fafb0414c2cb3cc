import { notFound } from "../../core/errors.ts";
import { queryLogs, type StoredLine } from "../../core/revision-logs/store.ts";
import { revisionStatusIn } from "../../core/revisions/read-store.ts";
import type { RevisionStatus } from "../../core/revisions/states.ts";
import type { Executor } from "../../db/client.ts";
import type { LogLine, LogsQuery } from "./schema.ts";

/** The revision's status, when the revision belongs to that deployment of that workspace; else 404. */
export async function revisionStatus(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionStatus> {
  const status = await revisionStatusIn(exec, workspaceId, deploymentId, revisionId);
  if (status === undefined) throw notFound("Revision not found.");
  return status;
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
