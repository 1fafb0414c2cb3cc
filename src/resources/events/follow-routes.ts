import type { ServerResponse } from "node:http";
import { eventsAfter, lastEventSeq, sequenceEvents } from "../../core/events/store.ts";
import { EVENTS_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import { streamSse } from "../../http/sse.ts";

const BATCH = 500;

/**
 * Streams a workspace's events as server-sent events until the client leaves: `id` is the event's
 * stream id (monotonic per database), `event` its type, `data` the same JSON body webhooks get.
 * After `Last-Event-ID` N it sends every event above N first, so a reconnect misses nothing
 * (events older than the retention are gone); without one it starts from now.
 */
export async function followEvents(
  db: Database,
  res: ServerResponse,
  closing: AbortSignal,
  workspaceId: string,
  types: readonly string[] | undefined,
  lastEventId: string | undefined,
  headers: Record<string, string>,
): Promise<void> {
  await sequenceEvents(db);
  let after = lastEventId ?? (await lastEventSeq(db.orm, workspaceId));
  await streamSse(db, res, closing, headers, {
    channel: EVENTS_CHANNEL,
    concerns: (payload) => payload === workspaceId,
    read: async () => {
      await sequenceEvents(db);
      const batch = await eventsAfter(db.orm, workspaceId, after, types, BATCH);
      const last = batch.at(-1);
      if (last) after = last.seq;
      return {
        frames: batch.map((e) => `id: ${e.seq}\nevent: ${e.type}\ndata: ${e.body}\n\n`),
        full: batch.length === BATCH,
      };
    },
  });
}
