import type { App } from "../../http/types.ts";
import { createDomainRoute } from "./create-routes.ts";
import { deleteDomainRoute } from "./delete-routes.ts";
import { listDomainsRoute } from "./list-routes.ts";

/** Custom domains of a deployment (docs/domains.md): one file per operation. */
export async function domainRoutes(app: App): Promise<void> {
  createDomainRoute(app);
  listDomainsRoute(app);
  deleteDomainRoute(app);
}
