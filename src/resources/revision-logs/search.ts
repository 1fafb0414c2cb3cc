import { deploymentExists } from "../../core/deployments/read-store.ts";
import { invalid, notFound } from "../../core/errors.ts";
import type { LogLevel } from "../../core/revision-logs/levels.ts";
import type { LogStream } from "../../core/revision-logs/store.ts";
import { type LogScope, queryLogs } from "../../core/revision-logs/store.ts";
import type { Executor } from "../../db/client.ts";
import type { LogPage, LogSearchBody } from "./schema.ts";
import { revisionStatus } from "./service.ts";

/** What a search reads: a stream of one revision, or the deploy stream of a whole deployment. */
export interface SearchTarget {
  workspaceId: string;
  deploymentId: string;
  revisionId?: string;
  stream: LogStream;
}

/** Epoch milliseconds or an RFC 3339 string (the schema checked which) as an ISO instant. */
const instant = (v: number | string): string => (typeof v === "number" ? new Date(v).toISOString() : v);

/**
 * The hosted service's log search: tenancy (another workspace's deployment, or a revision of
 * another deployment, is 404), then one page of lines in `order` with a cursor to continue.
 */
export async function searchLogs(exec: Executor, t: SearchTarget, body: LogSearchBody): Promise<LogPage> {
  let scope: LogScope;
  if (t.revisionId !== undefined) {
    await revisionStatus(exec, t.workspaceId, t.deploymentId, t.revisionId);
    scope = { revisionId: t.revisionId };
  } else {
    if (!(await deploymentExists(exec, t.workspaceId, t.deploymentId))) {
      throw notFound("Deployment not found.");
    }
    scope = { deploymentId: t.deploymentId };
  }
  const start = body.start_time == null ? undefined : instant(body.start_time);
  const end = body.end_time == null ? undefined : instant(body.end_time);
  if (start !== undefined && end !== undefined && Date.parse(start) > Date.parse(end)) {
    throw invalid(["body", "end_time"], "end_time is before start_time.");
  }
  const order = body.order ?? "asc";
  const limit = body.limit ?? 100;
  const cursor = body.offset == null ? "0" : String(body.offset);
  // One line more than the page shows whether older lines remain (desc).
  const found = await queryLogs(exec, scope, {
    stream: t.stream,
    order,
    limit: limit + 1,
    afterId: cursor === "0" ? undefined : cursor,
    level: body.level == null ? undefined : (body.level.toUpperCase() as LogLevel),
    text: body.query ?? undefined,
    start,
    end,
  });
  const page = found.slice(0, limit);
  const last = page.at(-1);
  // Ascending pages are followed as lines arrive, so their cursor stays usable at the end.
  const more = order === "asc" ? last !== undefined : found.length > limit;
  return {
    logs: page.map((l) => ({ id: l.id, timestamp: l.at.getTime(), level: l.level, message: l.line })),
    next_offset: more && last ? last.id : null,
  };
}
