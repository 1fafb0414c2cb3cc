import type { ServerResponse } from "node:http";
import { lastLineIdAt } from "../../core/revision-logs/store.ts";
import { revisionStatus } from "../../core/revisions/read-store.ts";
import { isTerminal } from "../../core/revisions/states.ts";
import { LOGS_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import { streamSse } from "../../http/sse.ts";
import type { LogsQuery } from "./schema.ts";
import { logsAfter } from "./service.ts";

const BATCH = 500;

/**
 * Streams a revision's log lines as server-sent events: what is stored, then new lines as they
 * are stored. The build stream ends once the revision is terminal and every line is sent; anything
 * else follows until the client leaves. Each event's id is the line's id, so `Last-Event-ID`
 * resumes without gaps.
 */
export async function followLogs(
  db: Database,
  res: ServerResponse,
  closing: AbortSignal,
  revisionId: string,
  q: Pick<LogsQuery, "type" | "since">,
  lastEventId: string | undefined,
  headers: Record<string, string>,
): Promise<void> {
  let after = lastEventId && /^\d{1,18}$/.test(lastEventId) ? lastEventId : "0";
  if (after === "0" && q.since) {
    after = await lastLineIdAt(db.orm, revisionId, q.since);
  }
  await streamSse(db, res, closing, headers, {
    channel: LOGS_CHANNEL,
    concerns: (payload) => payload === revisionId,
    read: async () => {
      // Status first: lines stored before it turned terminal are then all in the next read.
      const status = await revisionStatus(db.orm, revisionId);
      const batch = await logsAfter(db.orm, revisionId, q.type, after, BATCH);
      const last = batch.at(-1);
      if (last) after = last.id;
      const full = batch.length === BATCH;
      const ends = !full && (status === undefined || (q.type === "build" && isTerminal(status)));
      return {
        frames: batch.map(
          (line) =>
            `id: ${line.id}\ndata: ${JSON.stringify({ at: line.at, line: line.line, stream: line.stream })}\n\n`,
        ),
        full,
        ...(ends ? { end: `event: end\ndata: ${JSON.stringify({ status: status ?? null })}\n\n` } : {}),
      };
    },
  });
}
