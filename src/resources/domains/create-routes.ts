import { DeploymentParams } from "../../core/shapes.ts";
import { workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { CreateDomainBody, Domain } from "./schema.ts";
import { addDomain } from "./service.ts";

/** POST /v2/deployments/{id}/domains: claims a hostname, pending until its TXT record is seen. */
export function createDomainRoute(app: App): void {
  const { db, config } = app.deps;
  app.post(
    "/v2/deployments/:deployment_id/domains",
    {
      schema: {
        tags: ["domains"],
        summary: "Add a custom domain to a deployment",
        params: DeploymentParams,
        body: CreateDomainBody,
        response: {
          201: Domain,
          409: errorResponse("The hostname is claimed already, or is under the apps domain."),
        },
      },
    },
    async (request, reply) => {
      const { workspaceId } = workspaceOf(request);
      const domain = await addDomain(
        db,
        config.apps.domain,
        workspaceId,
        request.params.deployment_id,
        request.body.hostname,
      );
      return reply.code(201).send(domain);
    },
  );
}
