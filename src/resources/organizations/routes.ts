import { Type } from "@sinclair/typebox";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { CreateOrganizationBody, Organization, OrganizationCreated } from "./schema.ts";
import { createOrganization, listOrganizations } from "./service.ts";

const tags = ["organizations"];

export async function organizationRoutes(app: App): Promise<void> {
  const orm = app.deps.db.orm;

  app.get(
    "/v1/organizations",
    {
      schema: {
        tags,
        summary: "List organizations (a system key sees all, others their own)",
        response: { 200: Type.Array(Organization) },
      },
    },
    async (request) => listOrganizations(orm, principalOf(request)),
  );

  app.post(
    "/v1/organizations",
    {
      config: { auth: { system: true, role: "admin" } },
      schema: {
        tags,
        summary: "Create an organization with a default workspace and an admin key (system keys only)",
        body: CreateOrganizationBody,
        response: { 201: OrganizationCreated },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await createOrganization(orm, { name: request.body.name })),
  );
}
