import { Type } from "@sinclair/typebox";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { CreateProviderBody, OAuthProvider, PatchProviderBody, ProviderParams } from "./schema.ts";
import { createProvider, deleteProvider, getProvider, listProviders, patchProvider } from "./service.ts";

const tags = ["oauth-providers"];

/** OAuth provider configurations, scoped to the caller's organization (no workspace needed). */
export async function oauthProviderRoutes(app: App): Promise<void> {
  const { db, config, keyring } = app.deps;
  const orm = db.orm;
  const env = { config, keyring };

  app.get(
    "/v2/auth/providers",
    {
      schema: {
        tags,
        summary: "List the organization's OAuth providers (oldest first)",
        response: { 200: Type.Array(OAuthProvider) },
      },
    },
    async (request) => listProviders(orm, principalOf(request).organizationId),
  );

  app.post(
    "/v2/auth/providers",
    {
      schema: {
        tags,
        summary: "Create an OAuth provider",
        body: CreateProviderBody,
        response: { 201: OAuthProvider },
      },
    },
    async (request, reply) => {
      const created = await createProvider(orm, env, principalOf(request).organizationId, request.body);
      return reply.code(201).send(created);
    },
  );

  app.get(
    "/v2/auth/providers/:provider_id",
    {
      schema: {
        tags,
        summary: "Read one OAuth provider",
        params: ProviderParams,
        response: { 200: OAuthProvider },
      },
    },
    async (request) => getProvider(orm, principalOf(request).organizationId, request.params.provider_id),
  );

  app.patch(
    "/v2/auth/providers/:provider_id",
    {
      schema: {
        tags,
        summary: "Update an OAuth provider (omitted or null fields are left as they are)",
        params: ProviderParams,
        body: PatchProviderBody,
        response: { 200: OAuthProvider },
      },
    },
    async (request) =>
      patchProvider(orm, env, principalOf(request).organizationId, request.params.provider_id, request.body),
  );

  app.delete(
    "/v2/auth/providers/:provider_id",
    {
      schema: {
        tags,
        summary: "Delete an OAuth provider with its stored tokens",
        params: ProviderParams,
        response: { 200: OAuthProvider },
      },
    },
    async (request) => deleteProvider(orm, principalOf(request).organizationId, request.params.provider_id),
  );
}
