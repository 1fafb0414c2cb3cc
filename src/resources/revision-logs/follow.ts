import type { ServerResponse } from "node:http";
import { LOGS_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import { isTerminal } from "../../reconciler/states.ts";
import { revisionStatus } from "../revisions/store.ts";
import type { LogsQuery } from "./schema.ts";
import { logsAfter } from "./service.ts";
import { lastLineIdAt } from "./store.ts";

const BATCH = 500;
/** Fallback when a NOTIFY is missed (another process's listener reconnecting, say). */
const POLL_MS = 1000;
const HEARTBEAT_MS = 15_000;

/**
 * Streams a revision's log lines as server-sent events: what is stored, then new lines as they
 * are stored. The build stream ends once the revision is terminal and every line is sent; anything
 * else follows until the client leaves. Each event's id is the line's id, so `Last-Event-ID`
 * resumes without gaps.
 */
export async function followLogs(
  db: Database,
  res: ServerResponse,
  revisionId: string,
  q: Pick<LogsQuery, "type" | "since">,
  lastEventId: string | undefined,
  headers: Record<string, string>,
): Promise<void> {
  let after = lastEventId && /^\d{1,18}$/.test(lastEventId) ? lastEventId : "0";
  if (after === "0" && q.since) {
    after = await lastLineIdAt(db.orm, revisionId, q.since);
  }
  res.writeHead(200, {
    ...headers,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
  });
  res.write(": following\n\n");

  let closed = false;
  let wake: () => void = () => {};
  const onClose = () => {
    closed = true;
    wake();
  };
  res.on("close", onClose);
  // A write racing the client's departure must not become an unhandled error.
  res.on("error", () => {});
  const unlisten = await db.listen(LOGS_CHANNEL, (payload) => {
    if (payload === revisionId) wake();
  });
  const heartbeat = setInterval(() => {
    if (!closed) res.write(": keep-alive\n\n");
  }, HEARTBEAT_MS);
  try {
    while (!closed) {
      // Status first: lines stored before it turned terminal are then all in the next read.
      const status = await revisionStatus(db.orm, revisionId);
      const batch = await logsAfter(db.orm, revisionId, q.type, after, BATCH);
      if (closed) break;
      for (const line of batch) {
        res.write(
          `id: ${line.id}\ndata: ${JSON.stringify({ at: line.at, line: line.line, stream: line.stream })}\n\n`,
        );
        after = line.id;
      }
      if (batch.length === BATCH) continue;
      if (status === undefined || (q.type === "build" && isTerminal(status))) {
        res.write(`event: end\ndata: ${JSON.stringify({ status: status ?? null })}\n\n`);
        break;
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, POLL_MS);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  } finally {
    clearInterval(heartbeat);
    res.off("close", onClose);
    await unlisten();
    if (!res.writableEnded) res.end();
  }
}
