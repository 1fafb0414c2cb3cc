import { Type } from "@sinclair/typebox";
import { forbidden } from "../../core/errors.ts";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { CreateWorkspaceBody, Workspace } from "./schema.ts";
import { createWorkspace, listWorkspaces } from "./service.ts";

const tags = ["workspaces"];

export async function workspaceRoutes(app: App): Promise<void> {
  const orm = app.deps.db.orm;

  app.get(
    "/v1/workspaces",
    {
      schema: {
        tags,
        summary: "List the organization's workspaces",
        response: { 200: Type.Array(Workspace) },
      },
    },
    async (request) => listWorkspaces(orm, principalOf(request)),
  );

  app.post(
    "/v1/workspaces",
    {
      config: { auth: { role: "admin" } },
      schema: {
        tags,
        summary: "Create a workspace",
        body: CreateWorkspaceBody,
        response: { 201: Workspace },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      if (p.boundWorkspaceId !== null) throw forbidden("A workspace-bound API key cannot create workspaces.");
      return reply.code(201).send(await createWorkspace(orm, p.organizationId, request.body.name));
    },
  );
}
