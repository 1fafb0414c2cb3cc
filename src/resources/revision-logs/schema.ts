import { type Static, Type } from "@sinclair/typebox";
import { DateTime, QueryLimit, QueryOffset, Uuid } from "../../http/schemas.ts";
import type { LogStream } from "../../runtimes/interface.ts";

const Stream = Type.Unsafe<LogStream>({ type: "string", enum: ["build", "deploy"] });

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
