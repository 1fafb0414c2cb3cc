import type { Executor } from "../db/client.ts";
import { type CodehostConfig, driverFor } from "./drivers.ts";
import { IntegrationNotFound, RepoNotFound } from "./errors.ts";
import { findRepository } from "./interface.ts";
import { findIntegration } from "./store.ts";

/**
 * What `git clone` should fetch for a codehost revision: a local path for local_git, an https URL
 * carrying a fresh installation token (`x-access-token:<token>@`) for github. The repository must
 * still be one the integration makes available. Throws IntegrationNotFound or RepoNotFound when
 * either is gone, HostUnavailable when the host cannot answer.
 */
export async function cloneSourceFor(
  exec: Executor,
  config: CodehostConfig,
  integrationId: string,
  repoUrl: string,
): Promise<string> {
  const integration = await findIntegration(exec, integrationId);
  if (!integration) throw new IntegrationNotFound(`Code-host integration ${integrationId} no longer exists.`);
  const driver = driverFor(config, integration);
  const repo = findRepository(await driver.listRepositories(), repoUrl);
  if (!repo) {
    throw new RepoNotFound(
      `Repository ${repoUrl} is no longer available through integration ${integrationId}.`,
    );
  }
  return driver.cloneUrl(repo);
}
