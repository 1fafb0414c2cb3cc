import { workspaceOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { followEvents } from "./follow-routes.ts";
import { EventsQuery } from "./schema.ts";

const LAST_EVENT_ID = /^\d{1,18}$/;

export async function eventRoutes(app: App): Promise<void> {
  const { db } = app.deps;

  app.get(
    "/v2/events",
    {
      schema: {
        tags: ["events"],
        summary: "The workspace's events, live, as server-sent events",
        description:
          "A `text/event-stream` that stays open: each event has `id` (monotonic in this install), " +
          "`event` (its type) and `data` (the JSON body webhooks receive). Reconnect with `Last-Event-ID` " +
          "(or `last_event_id`) to get every event after it first; without it the stream starts now.",
        querystring: EventsQuery,
      },
    },
    async (request, reply) => {
      const { workspaceId } = workspaceOf(request);
      const header = request.headers["last-event-id"];
      const fromHeader =
        typeof header === "string" && LAST_EVENT_ID.test(header.trim()) ? header.trim() : undefined;
      reply.hijack();
      await followEvents(
        db,
        reply.raw,
        app.closing,
        workspaceId,
        request.query.types,
        fromHeader ?? request.query.last_event_id,
        { "x-request-id": request.id },
      );
      return reply;
    },
  );
}
