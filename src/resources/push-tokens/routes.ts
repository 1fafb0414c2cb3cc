import { workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { PushToken, PushTokenParams, RegistryBearer, RegistryTokenQuery } from "./schema.ts";
import { exchangeToken, issuePushToken } from "./service.ts";

export async function pushTokenRoutes(app: App): Promise<void> {
  const { orm } = app.deps.db;
  const { listeners } = app.deps.config;
  app.post(
    "/v2/deployments/:deployment_id/push-token",
    {
      schema: {
        tags: ["deployments"],
        summary: "Get credentials to push images of a deployment to this server's registry",
        description:
          "For clients that build their own images (internal_docker). Answers the registry, the repository for this " +
          "deployment and how to log in. Members and admins only. With registry token auth (SLIPWAY_REGISTRY_TOKEN_*) " +
          "the token pushes and pulls this repository alone and expires (SLIPWAY_REGISTRY_PUSH_TOKEN_TTL_S); without it, " +
          "it is the credential this server logs in with, which is neither scoped nor expiring.",
        params: PushTokenParams,
        response: {
          201: PushToken,
          404: errorResponse("No such deployment in this workspace."),
          409: errorResponse("No registry is configured (SLIPWAY_REGISTRY_URL)."),
        },
      },
    },
    async (request, reply) => {
      const token = await issuePushToken(orm, listeners, workspaceOf(request), request.params.deployment_id);
      // Credentials are never cached by a proxy or the browser.
      reply.header("cache-control", "no-store");
      return reply.code(201).send(token);
    },
  );

  app.get(
    "/v2/registry/token",
    {
      config: { auth: { public: true } },
      schema: {
        tags: ["deployments"],
        summary: "The registry's token endpoint (Docker token authentication)",
        description:
          "Called by registry clients, not by people: a registry configured with `auth: token` and this URL as its realm " +
          "sends them here. No API key: the push token from POST /v2/deployments/{id}/push-token is the Basic password " +
          "(any user name). The bearer grants what was asked of that token's repository, and nothing of any other.",
        querystring: RegistryTokenQuery,
        response: {
          200: RegistryBearer,
          400: errorResponse(
            "Another registry's service name, or a scope that is not repository:<name>:<actions>.",
          ),
          401: errorResponse(
            "No push token, or one that is not valid, has expired, or whose deployment is gone.",
          ),
          404: errorResponse(
            "This server is not a registry token server (SLIPWAY_REGISTRY_TOKEN_* is not set).",
          ),
        },
      },
    },
    async (request, reply) => {
      const { scope, service } = request.query;
      const bearer = await exchangeToken(orm, listeners, {
        authorization: request.headers.authorization,
        service,
        scopes: scope === undefined ? [] : Array.isArray(scope) ? scope : [scope],
      });
      reply.header("cache-control", "no-store");
      return bearer;
    },
  );
}
