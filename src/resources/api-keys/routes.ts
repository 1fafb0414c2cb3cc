import { Type } from "@sinclair/typebox";
import { IdParams } from "../../core/shapes.ts";
import { AUTH_CHANNEL } from "../../db/channels.ts";
import { principalOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { ApiKey, ApiKeyCreated, CreateApiKeyBody } from "./schema.ts";
import { createApiKey, listApiKeys, revokeApiKey } from "./service.ts";

const admin = { auth: { role: "admin" as const } };
const tags = ["api-keys"];

export async function apiKeyRoutes(app: App): Promise<void> {
  const orm = app.deps.db.orm;

  app.get(
    "/v1/api-keys",
    {
      config: admin,
      schema: { tags, summary: "List the organization's API keys", response: { 200: Type.Array(ApiKey) } },
    },
    async (request) => listApiKeys(orm, principalOf(request)),
  );

  app.post(
    "/v1/api-keys",
    {
      config: admin,
      schema: {
        tags,
        summary: "Create an API key (its value is shown once)",
        body: CreateApiKeyBody,
        response: { 201: ApiKeyCreated },
      },
    },
    async (request, reply) => {
      const created = await createApiKey(orm, principalOf(request), request.body);
      return reply.code(201).send(created);
    },
  );

  app.delete(
    "/v1/api-keys/:id",
    {
      config: admin,
      schema: { tags, summary: "Revoke an API key", params: IdParams, response: { 200: ApiKey } },
    },
    async (request) => {
      const revoked = await revokeApiKey(orm, principalOf(request), request.params.id);
      // This process forgets the key now; the others when the notification reaches them.
      app.authCache.invalidateKey(revoked.id);
      await app.deps.db.notify(AUTH_CHANNEL, revoked.id);
      return revoked;
    },
  );
}
