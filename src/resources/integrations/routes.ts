import { Type } from "@sinclair/typebox";
import { principalOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { CodehostRepository, CreateIntegrationBody, Integration, IntegrationParams } from "./schema.ts";
import {
  createIntegration,
  deleteIntegration,
  listIntegrationRepositories,
  listIntegrations,
} from "./service.ts";

const admin = { auth: { role: "admin" as const } };
const tags = ["integrations"];
const BASE = "/v1/integrations/forge/codehost";
const LEGACY_BASE = "/v1/integrations/codehost";
const UPSTREAM = { 502: errorResponse("The code host could not be read; `detail` says why.") };

export async function integrationRoutes(app: App): Promise<void> {
  const { orm } = app.deps.db;
  const { config } = app.deps;

  app.post(
    BASE,
    {
      config: admin,
      schema: {
        tags,
        summary: "Add a code-host integration (a local git directory or a GitHub App installation)",
        body: CreateIntegrationBody,
        response: { 201: Integration, 409: errorResponse("Already integrated."), ...UPSTREAM },
      },
    },
    async (request, reply) => {
      const created = await createIntegration(orm, config, principalOf(request), request.body);
      return reply.code(201).send(created);
    },
  );

  app.delete(
    `${BASE}/:integration_id`,
    {
      config: admin,
      schema: {
        tags,
        summary: "Remove a code-host integration",
        params: IntegrationParams,
        response: { 200: Integration, 409: errorResponse("A deployment still builds from it.") },
      },
    },
    async (request) => deleteIntegration(orm, principalOf(request), request.params.integration_id),
  );

  // The hosted service answers both reads at a `forge/` path and at a legacy twin without it.
  for (const [base, twin] of [
    [BASE, ""],
    [LEGACY_BASE, ` (legacy twin of ${BASE}; the same answers)`],
  ] as const) {
    app.get(
      `${base}/install`,
      {
        schema: {
          tags,
          summary: `List the organization's code-host integrations${twin}`,
          response: { 200: Type.Array(Integration) },
        },
      },
      async (request) => listIntegrations(orm, principalOf(request)),
    );

    app.get(
      `${base}/:integration_id/repos`,
      {
        schema: {
          tags,
          summary: `List the repositories an integration makes available to deploy (every page, no envelope)${twin}`,
          params: IntegrationParams,
          response: { 200: Type.Array(CodehostRepository), ...UPSTREAM },
        },
      },
      async (request) =>
        listIntegrationRepositories(orm, config, principalOf(request), request.params.integration_id),
    );
  }
}
