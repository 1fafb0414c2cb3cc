import type { LogStream } from "../../core/revision-logs/store.ts";
import { workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { LogPage, LogSearchBody, LogsParams, ProjectParams } from "./schema.ts";
import { searchLogs } from "./search.ts";

const tags = ["revisions"];
// Searches are reads sent as POST (the hosted service's shape), so viewers may call them.
const reader = { auth: { role: "viewer" as const } };
const RESPONSES = {
  200: LogPage,
  400: errorResponse("The body is not valid JSON."),
};
const BODY_NOTE =
  "Every body field is optional; an absent body is `{}`. Pages follow `order` by the order lines were " +
  "stored in; pass `next_offset` back as `offset` to continue. `start_time`/`end_time` (inclusive) are " +
  "epoch milliseconds or RFC 3339 date-times. Secret values are redacted before lines are stored.";

/** The hosted service's log endpoints under `/v1/projects/{deployment_id}` (project = deployment). */
export async function logSearchRoutes(app: App): Promise<void> {
  const { orm } = app.deps.db;

  // A POST without a body searches with every default, as the hosted service allows.
  const emptyBodyIsDefaults = async (request: { body: unknown }) => {
    if (request.body === undefined || request.body === null) request.body = {};
  };

  app.post(
    "/v1/projects/:deployment_id/deploy_logs",
    {
      config: reader,
      preValidation: emptyBodyIsDefaults,
      schema: {
        tags,
        summary: "Search the deploy logs of every revision of a deployment",
        description: `Runtime output of all the deployment's revisions, interleaved in the order it was stored. ${BODY_NOTE}`,
        params: ProjectParams,
        body: LogSearchBody,
        response: RESPONSES,
      },
    },
    async (request) =>
      searchLogs(
        orm,
        { ...workspaceOf(request), deploymentId: request.params.deployment_id, stream: "deploy" },
        request.body,
      ),
  );

  const revisionSearch = (stream: LogStream, summary: string) =>
    app.post(
      `/v1/projects/:deployment_id/revisions/:revision_id/${stream}_logs`,
      {
        config: reader,
        preValidation: emptyBodyIsDefaults,
        schema: {
          tags,
          summary,
          description: `404 also when the revision is not one of this deployment's. ${BODY_NOTE}`,
          params: LogsParams,
          body: LogSearchBody,
          response: RESPONSES,
        },
      },
      async (request) =>
        searchLogs(
          orm,
          {
            ...workspaceOf(request),
            deploymentId: request.params.deployment_id,
            revisionId: request.params.revision_id,
            stream,
          },
          request.body,
        ),
    );
  revisionSearch("deploy", "Search a revision's deploy logs");
  revisionSearch("build", "Search a revision's build logs");
}
