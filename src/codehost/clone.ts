import type { AppDeps } from "../deps.ts";
import { notFound } from "../http/errors.ts";
import { driverFor } from "./drivers.ts";
import { findRepository } from "./interface.ts";
import { findIntegration } from "./store.ts";

/**
 * What `git clone` should fetch for a codehost revision: a local path for local_git, an https URL
 * carrying a fresh installation token (`x-access-token:<token>@`) for github. The repository must
 * still be one the integration makes available. Errors: 404 (integration or repository gone),
 * 502 (host unreachable).
 */
export async function cloneSourceFor(deps: AppDeps, integrationId: string, repoUrl: string): Promise<string> {
  const integration = await findIntegration(deps.db.orm, integrationId);
  if (!integration) throw notFound(`Code-host integration ${integrationId} no longer exists.`);
  const driver = driverFor(deps.config, integration);
  const repo = findRepository(await driver.listRepositories(), repoUrl);
  if (!repo)
    throw notFound(`Repository ${repoUrl} is no longer available through integration ${integrationId}.`);
  return driver.cloneUrl(repo);
}
