import { Type } from "@sinclair/typebox";
import { principalOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import {
  CreateProviderBody,
  DeletedProvider,
  OAuthProvider,
  PatchProviderBody,
  ProviderParams,
} from "./schema.ts";
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
        response: {
          200: OAuthProvider,
          409: errorResponse("A provider with this provider_id exists in the organization."),
        },
      },
    },
    async (request) => createProvider(orm, env, principalOf(request).organizationId, request.body),
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
        summary: "Delete an OAuth provider with its stored tokens and agent connections",
        description: "Answers the deleted record and a `message`. The tokens are forgotten, not revoked.",
        params: ProviderParams,
        response: { 200: DeletedProvider },
      },
    },
    async (request) => {
      const slug = request.params.provider_id;
      const deleted = await deleteProvider(orm, principalOf(request).organizationId, slug);
      return { ...deleted, message: `OAuth provider "${slug}" deleted.` };
    },
  );
}
