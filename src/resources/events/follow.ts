import type { ServerResponse } from "node:http";
import { EVENTS_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import { eventsAfter, lastEventSeq, sequenceEvents } from "./store.ts";

const BATCH = 500;
/** Fallback when a NOTIFY is missed (another process's listener reconnecting, say). */
const POLL_MS = 1000;
const HEARTBEAT_MS = 15_000;

/**
 * Streams a workspace's events as server-sent events until the client leaves: `id` is the event's
 * stream id (monotonic per database), `event` its type, `data` the same JSON body webhooks get.
 * After `Last-Event-ID` N it sends every event above N first, so a reconnect misses nothing
 * (events older than the retention are gone); without one it starts from now.
 */
export async function followEvents(
  db: Database,
  res: ServerResponse,
  workspaceId: string,
  types: readonly string[] | undefined,
  lastEventId: string | undefined,
  headers: Record<string, string>,
): Promise<void> {
  await sequenceEvents(db);
  let after = lastEventId ?? (await lastEventSeq(db.orm, workspaceId));

  res.writeHead(200, {
    ...headers,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
  });
  res.write(": following\n\n");

  let closed = false;
  let wake: () => void = () => {};
  let woken = false;
  const onClose = () => {
    closed = true;
    wake();
  };
  res.on("close", onClose);
  // A write racing the client's departure must not become an unhandled error.
  res.on("error", () => {});
  const unlisten = await db.listen(EVENTS_CHANNEL, (payload) => {
    if (payload !== workspaceId) return;
    woken = true;
    wake();
  });
  const heartbeat = setInterval(() => {
    if (!closed) res.write(": keep-alive\n\n");
  }, HEARTBEAT_MS);
  try {
    while (!closed) {
      woken = false;
      await sequenceEvents(db);
      const batch = await eventsAfter(db.orm, workspaceId, after, types, BATCH);
      if (closed) break;
      for (const e of batch) {
        res.write(`id: ${e.seq}\nevent: ${e.type}\ndata: ${e.body}\n\n`);
        after = e.seq;
      }
      if (batch.length === BATCH || woken) continue;
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
