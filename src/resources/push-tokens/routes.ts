import { workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { PushToken, PushTokenParams } from "./schema.ts";
import { issuePushToken } from "./service.ts";

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
          "deployment and how to log in. Members and admins only. The credential is the one this server logs in " +
          "with: it is not limited to the repository and does not expire.",
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
}
