import { type Static, Type } from "@sinclair/typebox";
import { EVENT_TYPES } from "../../core/events/types.ts";
import { StringEnum } from "../../core/shapes.ts";

export const EventTypeSchema = StringEnum(EVENT_TYPES);

export const EventsQuery = Type.Object({
  types: Type.Optional(
    Type.Array(EventTypeSchema, {
      minItems: 1,
      maxItems: EVENT_TYPES.length,
      description: "Only these event types (repeat the parameter); all when absent.",
    }),
  ),
  last_event_id: Type.Optional(
    Type.String({
      pattern: "^\\d{1,18}$",
      description: "Resume after this event id (what the `Last-Event-ID` header also says; the header wins).",
    }),
  ),
});
export type EventsQuery = Static<typeof EventsQuery>;
