import { type Static, Type } from "@sinclair/typebox";
import { LOG_LEVELS } from "../../core/revision-logs/levels.ts";
import type { LogStream } from "../../core/revision-logs/store.ts";
import { DateTime, Nullable, QueryLimit, QueryOffset, StringEnum, Uuid } from "../../core/shapes.ts";

const Stream = StringEnum(["build", "deploy"] satisfies LogStream[]);

export const LogLine = Type.Object(
  { at: DateTime, line: Type.String(), stream: Stream },
  {
    $id: "RevisionLogLine",
    description: "One line of a revision's build or deploy output (secrets redacted).",
  },
);
export type LogLine = Static<typeof LogLine>;

export const LogsParams = Type.Object({ deployment_id: Uuid, revision_id: Uuid });

/** Lines kept per revision and stream (log-sink cap), so one page can hold them all. */
export const MAX_LOG_PAGE = 5000;

export const LogsQuery = Type.Object({
  type: Type.Optional(Stream),
  limit: QueryLimit(MAX_LOG_PAGE, 1000),
  offset: QueryOffset(),
  since: Type.Optional(DateTime),
});
export type LogsQuery = Static<typeof LogsQuery>;

/** Most lines one search body returns. */
export const MAX_SEARCH_PAGE = 1000;
/** Latest epoch millisecond a JavaScript date can hold. */
const MAX_EPOCH_MS = 8_640_000_000_000_000;

const Instant = Type.Union(
  [Type.Integer({ minimum: 0, maximum: MAX_EPOCH_MS }), Type.String({ format: "date-time" })],
  { description: "Epoch milliseconds, or an RFC 3339 date-time with its offset (`2026-03-08T00:00:00Z`)." },
);
const LevelName = Type.Unsafe<string>({
  type: "string",
  enum: [...LOG_LEVELS, ...LOG_LEVELS.map((l) => l.toLowerCase())],
  description:
    "Only lines of this level (exactly; either case). How a line's level is derived: docs/deployments.md, Logs.",
});

/** The body of the hosted service's log searches (`POST /v1/projects/…/deploy_logs`, `…/build_logs`). */
export const LogSearchBody = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_SEARCH_PAGE, default: 100, description: "Lines in this page." }),
  ),
  order: Type.Optional(
    Type.Unsafe<"asc" | "desc">({
      type: "string",
      enum: ["asc", "desc"],
      default: "asc",
      description: "`asc`: oldest first; `desc`: newest first (by the order lines were stored in).",
    }),
  ),
  offset: Type.Optional(
    Nullable(
      Type.Union([Type.String({ pattern: "^[0-9]{1,18}$" }), Type.Integer({ minimum: 0 })], {
        description:
          "A cursor: send the previous answer's `next_offset` to continue after its last line. " +
          "Absent, null or 0: from the first line in `order`. Not a count of lines to skip.",
      }),
    ),
  ),
  level: Type.Optional(Nullable(LevelName)),
  query: Type.Optional(
    Nullable(
      Type.String({ maxLength: 1000, description: "Only lines containing this text (case-insensitive)." }),
    ),
  ),
  start_time: Type.Optional(Nullable(Instant)),
  end_time: Type.Optional(Nullable(Instant)),
});
export type LogSearchBody = Static<typeof LogSearchBody>;

export const LogEntry = Type.Object({
  id: Type.String({ description: "Unique and increasing in the order lines were stored." }),
  timestamp: Type.Integer({ description: "When the line was written, in epoch milliseconds." }),
  level: StringEnum(LOG_LEVELS),
  message: Type.String({ description: "The line, with secret values replaced by `[redacted]`." }),
});
export type LogEntry = Static<typeof LogEntry>;

export const LogPage = Type.Object({
  logs: Type.Array(LogEntry),
  next_offset: Nullable(
    Type.String({
      description:
        "Send as `offset` for the next page. `desc`: null when no older line matches. `asc`: the " +
        "last line's cursor whenever this page has lines (new lines may still be appended), null when it is empty.",
    }),
  ),
});
export type LogPage = Static<typeof LogPage>;

export const ProjectParams = Type.Object({ deployment_id: Uuid });
