import { DeploymentParams } from "../../core/shapes.ts";
import { workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import { type App, replyStored } from "../../http/types.ts";
import { Deployment } from "../deployments/schema.ts";
import { ListRevisionsQuery, Revision, RevisionList, RevisionParams } from "./schema.ts";
import { getRevision, interruptRevision, listRevisions, redeployRevision } from "./service.ts";

const tags = ["revisions"];

export async function revisionRoutes(app: App): Promise<void> {
  const { deps } = app;

  app.get(
    "/v2/deployments/:deployment_id/revisions",
    {
      schema: {
        tags,
        summary: "List a deployment's revisions, newest first",
        params: DeploymentParams,
        querystring: ListRevisionsQuery,
        response: { 200: RevisionList },
      },
    },
    // Bodies are the stored records (a list assembled by PostgreSQL), sent as they are; kept in the
    // read cache until the workspace changes.
    (request, reply) =>
      replyStored(reply, () => {
        const ws = workspaceOf(request).workspaceId;
        const id = request.params.deployment_id;
        return app.reads.read(
          ws,
          `revisions/${id}?${JSON.stringify(request.query)}`,
          () => listRevisions(deps.db, ws, id, request.query),
          (b) => b.length,
        );
      }),
  );

  app.get(
    "/v2/deployments/:deployment_id/revisions/:revision_id",
    {
      schema: { tags, summary: "Get a revision", params: RevisionParams, response: { 200: Revision } },
    },
    (request, reply) =>
      replyStored(reply, () => {
        const ws = workspaceOf(request).workspaceId;
        const { deployment_id: id, revision_id: rev } = request.params;
        return app.reads.read(
          ws,
          `revision/${id}/${rev}`,
          () => getRevision(deps.db, ws, id, rev),
          (b) => b.length,
        );
      }),
  );

  app.post(
    "/v2/deployments/:deployment_id/revisions/:revision_id/redeploy",
    {
      schema: {
        tags,
        summary: "Queue a new revision with this revision's configuration, secrets and commit",
        params: RevisionParams,
        response: { 200: Deployment, 400: errorResponse("The deployment is being deleted.") },
      },
    },
    (request, reply) =>
      replyStored(reply, () =>
        redeployRevision(
          deps.db,
          deps.keyring,
          workspaceOf(request),
          request.params.deployment_id,
          request.params.revision_id,
        ),
      ),
  );

  // The anchor's clients use both names of the same operation.
  for (const path of ["interrupt", "interruption"]) {
    app.post(
      `/v2/deployments/:deployment_id/revisions/:revision_id/${path}`,
      {
        schema: {
          tags,
          summary:
            path === "interrupt"
              ? "Interrupt a revision that has not ended"
              : "Interrupt a revision that has not ended (same as …/interrupt)",
          params: RevisionParams,
          response: { 200: Revision, 400: errorResponse("The revision has already ended.") },
        },
      },
      (request, reply) =>
        replyStored(reply, () =>
          interruptRevision(
            deps.db,
            workspaceOf(request),
            request.params.deployment_id,
            request.params.revision_id,
          ),
        ),
    );
  }
}
