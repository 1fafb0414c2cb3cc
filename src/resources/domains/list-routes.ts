import { Type } from "@sinclair/typebox";
import { DeploymentParams } from "../../core/shapes.ts";
import { workspaceOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { Domain } from "./schema.ts";
import { listDomains } from "./service.ts";

/** GET /v2/deployments/{id}/domains: the deployment's domains, oldest first. */
export function listDomainsRoute(app: App): void {
  const { db } = app.deps;
  app.get(
    "/v2/deployments/:deployment_id/domains",
    {
      schema: {
        tags: ["domains"],
        summary: "List a deployment's custom domains",
        params: DeploymentParams,
        response: { 200: Type.Array(Domain) },
      },
    },
    async (request) =>
      listDomains(
        db,
        workspaceOf(request).workspaceId,
        request.params.deployment_id,
        ["acme", "internal"].includes(app.deps.config.apps.tls.mode),
      ),
  );
}
