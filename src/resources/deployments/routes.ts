import { Type } from "@sinclair/typebox";
import { DeploymentParams } from "../../core/shapes.ts";
import { workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import { type App, replyStored } from "../../http/types.ts";
import { createDeployment } from "./create.ts";
import { deleteDeployment, deleteDeployments } from "./delete.ts";
import {
  BulkDeleteNotFound,
  BulkDeleteQuery,
  BulkDeleteResponse,
  DeleteDeploymentQuery,
} from "./delete-schema.ts";
import { checkIdempotencyKey } from "./idempotency.ts";
import { bulkDeleteIds, listDeployments } from "./list.ts";
import { patchDeployment } from "./patch.ts";
import { PatchStates } from "./patch-states.ts";
import { notModified } from "./preconditions.ts";
import { DeploymentProcessList, listDeploymentProcesses } from "./processes.ts";
import { getDeploymentRecord } from "./record.ts";
import {
  CreateDeploymentBody,
  Deployment,
  DeploymentList,
  ListDeploymentsQuery,
  PatchDeploymentBody,
} from "./schema.ts";

const tags = ["deployments"];

export async function deploymentRoutes(app: App): Promise<void> {
  const { deps } = app;
  // What this app's PATCHes left of each deployment, for the next PATCH (patch-states.ts).
  const patchStates = new PatchStates();

  app.post(
    "/v2/deployments",
    {
      schema: {
        tags,
        summary: "Create a deployment (and its tracing project, and its first revision when it can have one)",
        headers: Type.Object({
          "idempotency-key": Type.Optional(
            Type.String({
              description:
                "The same key and body within 24 h replays the first response; another body → 422.",
            }),
          ),
        }),
        body: CreateDeploymentBody,
        response: {
          201: Deployment,
          409: errorResponse("A deployment of that name exists in the workspace."),
          502: errorResponse("The code host could not be reached."),
        },
      },
    },
    (request, reply) =>
      replyStored(reply, async () => {
        const key = checkIdempotencyKey(request.headers["idempotency-key"]);
        const result = await createDeployment(
          deps.db,
          deps.keyring,
          deps.config,
          workspaceOf(request),
          request.body,
          key,
        );
        if (result.replayed) reply.header("idempotent-replayed", "true");
        reply.code(201);
        // A replay is the record as the key kept it: the 201 schema's serializer writes it.
        return typeof result.body === "string" ? result.body : String(reply.serialize(result.body));
      }),
  );

  app.get(
    "/v2/deployments",
    {
      schema: {
        tags,
        summary: "List deployments, newest first, with filters and offset pagination",
        querystring: ListDeploymentsQuery,
        response: { 200: DeploymentList },
      },
    },
    // The body is assembled by PostgreSQL from the stored records and sent as is (no serializer);
    // kept in the read cache until the workspace changes.
    (request, reply) =>
      replyStored(reply, () => {
        const ws = workspaceOf(request).workspaceId;
        return app.reads.read(
          ws,
          `deployments?${JSON.stringify(request.query)}`,
          () => listDeployments(deps.db, ws, request.query),
          (b) => b.length,
        );
      }),
  );

  app.get(
    "/v2/deployments/:deployment_id",
    {
      schema: {
        tags,
        summary: "Get a deployment (with an ETag; If-None-Match → 304)",
        params: DeploymentParams,
        response: { 200: Deployment, 304: Type.Null({ description: "Not modified." }) },
      },
    },
    (request, reply) =>
      replyStored(reply, async () => {
        const ws = workspaceOf(request).workspaceId;
        const id = request.params.deployment_id;
        const stored = await app.reads.read(
          ws,
          `deployment/${id}`,
          () => getDeploymentRecord(deps.db, ws, id),
          (r) => r.record.length + r.etag.length,
        );
        reply.header("etag", stored.etag);
        // 304 has no body (app.ts empties it).
        if (notModified(request.headers["if-none-match"], stored.etag)) reply.code(304);
        return stored.record;
      }),
  );

  app.get(
    "/v2/deployments/:deployment_id/processes",
    {
      schema: {
        tags,
        summary:
          "List a deployment's processes (API processes and queue workers) that run on this machine, or its pods on its listener's cluster",
        params: DeploymentParams,
        response: { 200: DeploymentProcessList },
      },
    },
    async (request) =>
      listDeploymentProcesses(
        deps.db,
        deps.processes,
        workspaceOf(request).workspaceId,
        request.params.deployment_id,
      ),
  );

  app.patch(
    "/v2/deployments/:deployment_id",
    {
      schema: {
        tags,
        summary: "Update a deployment; revision fields make a new revision (docs/deployments.md)",
        params: DeploymentParams,
        headers: Type.Object({
          "if-match": Type.Optional(Type.String({ description: "The ETag of a GET; 412 when it changed." })),
        }),
        body: PatchDeploymentBody,
        response: {
          200: Deployment,
          400: errorResponse("An immutable field was changed, or the deployment is being deleted."),
          412: errorResponse("If-Match does not match the current ETag."),
          502: errorResponse("The code host could not be reached."),
        },
      },
    },
    (request, reply) =>
      replyStored(reply, async () => {
        const result = await patchDeployment(
          deps.db,
          deps.keyring,
          deps.config,
          patchStates,
          workspaceOf(request),
          request.params.deployment_id,
          request.body,
          request.headers["if-match"],
        );
        reply.header("etag", result.etag);
        return result.record;
      }),
  );

  app.delete(
    "/v2/deployments/:deployment_id",
    {
      schema: {
        tags,
        summary: "Delete a deployment: AWAITING_DELETE at once, then gone (404) once torn down",
        params: DeploymentParams,
        querystring: DeleteDeploymentQuery,
        response: { 204: Type.Null({ description: "Deleted; the teardown goes on in the background." }) },
      },
    },
    async (request, reply) => {
      await deleteDeployment(
        deps.db,
        deps.config.reconciler,
        workspaceOf(request),
        request.params.deployment_id,
        {
          deleteTracingProject: request.query.delete_tracing_project === true,
        },
      );
      return reply.code(204).send(null);
    },
  );

  app.delete(
    "/v2/deployments",
    {
      schema: {
        tags,
        summary: "Delete up to 100 deployments; the body gives each id's result",
        querystring: BulkDeleteQuery,
        response: {
          200: BulkDeleteResponse,
          207: { ...BulkDeleteResponse, description: "Some ids were deleted, others were not." },
          404: BulkDeleteNotFound,
        },
      },
    },
    async (request, reply) => {
      const ids = bulkDeleteIds(request.query.deployment_ids);
      const results = await deleteDeployments(deps.db, deps.config.reconciler, workspaceOf(request), ids, {
        deleteTracingProject: request.query.delete_tracing_project === true,
      });
      const deleted = results.filter((r) => r.status === 204).length;
      if (deleted === 0) {
        return reply.code(404).send({ detail: "None of the deployments exists in this workspace.", results });
      }
      return reply.code(deleted === results.length ? 200 : 207).send({ results });
    },
  );
}
