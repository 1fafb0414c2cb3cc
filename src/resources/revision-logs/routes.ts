import { Type } from "@sinclair/typebox";
import { workspaceOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { followLogs } from "./follow-routes.ts";
import { LogLine, LogsParams, LogsQuery } from "./schema.ts";
import { logSearchRoutes } from "./search-routes.ts";
import { listLogs, revisionStatus } from "./service.ts";

const tags = ["revisions"];

export async function revisionLogRoutes(app: App): Promise<void> {
  const { db } = app.deps;
  await logSearchRoutes(app);

  app.get(
    "/v2/deployments/:deployment_id/revisions/:revision_id/logs",
    {
      schema: {
        tags,
        summary: "A revision's build or deploy log",
        description:
          "Stored lines, oldest first (capped per revision and stream; the oldest are dropped first), " +
          "with secret values redacted. With `Accept: text/event-stream` the response follows live as " +
          "server-sent events (`data` is one line record, `id` resumes with `Last-Event-ID`): for " +
          "`type=build` until the revision is terminal (then an `end` event), otherwise until the client leaves.",
        params: LogsParams,
        querystring: LogsQuery,
        response: { 200: Type.Array(LogLine) },
      },
    },
    async (request, reply) => {
      const { workspaceId } = workspaceOf(request);
      const { deployment_id, revision_id } = request.params;
      await revisionStatus(db.orm, workspaceId, deployment_id, revision_id);
      const accept = request.headers.accept ?? "";
      if (accept.includes("text/event-stream")) {
        reply.hijack();
        const lastId = request.headers["last-event-id"];
        await followLogs(
          db,
          reply.raw,
          app.closing,
          revision_id,
          request.query,
          typeof lastId === "string" ? lastId : undefined,
          { "x-request-id": request.id },
        );
        return reply;
      }
      return listLogs(db.orm, revision_id, request.query);
    },
  );
}
