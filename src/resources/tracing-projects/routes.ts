import { Type } from "@sinclair/typebox";
import { workspaceOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { ListTracingProjectsQuery, TracingProject, TracingProjectParams } from "./schema.ts";
import { getTracingProject } from "./service.ts";
import { listTracingProjects } from "./store.ts";

const tags = ["tracing-projects"];

export async function tracingProjectRoutes(app: App): Promise<void> {
  const orm = app.deps.db.orm;

  app.get(
    "/v1/tracing-projects",
    {
      schema: {
        tags,
        summary: "List the workspace's tracing projects (newest first), optionally by exact name",
        querystring: ListTracingProjectsQuery,
        response: { 200: Type.Array(TracingProject) },
      },
    },
    async (request) => listTracingProjects(orm, workspaceOf(request).workspaceId, request.query),
  );

  app.get(
    "/v1/tracing-projects/:id",
    {
      schema: {
        tags,
        summary: "Get a tracing project",
        params: TracingProjectParams,
        response: { 200: TracingProject },
      },
    },
    async (request) => getTracingProject(orm, workspaceOf(request).workspaceId, request.params.id),
  );
}
