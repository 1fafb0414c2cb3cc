import { workspaceOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import { Domain, DomainParams } from "./schema.ts";
import { removeDomain } from "./service.ts";

/** DELETE /v2/deployments/{id}/domains/{domain_id}: the edge stops serving the hostname. */
export function deleteDomainRoute(app: App): void {
  const { db, config } = app.deps;
  app.delete(
    "/v2/deployments/:deployment_id/domains/:domain_id",
    {
      schema: {
        tags: ["domains"],
        summary: "Remove a custom domain from a deployment",
        params: DomainParams,
        response: { 200: Domain },
      },
    },
    async (request) =>
      removeDomain(
        db,
        config.apps.domain,
        workspaceOf(request).workspaceId,
        request.params.deployment_id,
        request.params.domain_id,
      ),
  );
}
