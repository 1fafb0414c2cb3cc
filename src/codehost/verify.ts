import type { Executor } from "../db/client.ts";
import { type CodehostConfig, driverFor } from "./drivers.ts";
import { IntegrationNotFound, RefNotFound, RepoNotFound } from "./errors.ts";
import { findRepository, isValidRef } from "./interface.ts";
import { findIntegration } from "./store.ts";

/**
 * Checks a codehost source before a deployment or revision uses it: the integration is this
 * organization's, the repository is one it makes available, and the ref exists there. Throws
 * IntegrationNotFound, RepoNotFound or RefNotFound; HostUnavailable when the host cannot answer.
 */
export async function verifyCodehostSource(
  exec: Executor,
  config: CodehostConfig,
  organizationId: string,
  input: { integrationId: string; repoUrl: string; repoRef: string },
): Promise<void> {
  const integration = await findIntegration(exec, input.integrationId, organizationId);
  if (!integration) throw new IntegrationNotFound("Not a code-host integration of this organization.");
  const driver = driverFor(config, integration);
  const repo = findRepository(await driver.listRepositories(), input.repoUrl);
  if (!repo) {
    throw new RepoNotFound(
      "Not a repository of this integration: use a `url` from GET /v1/integrations/forge/codehost/{integration_id}/repos.",
    );
  }
  if (!isValidRef(input.repoRef)) throw new RefNotFound("Must be a branch name or refs/tags/<tag>.");
  if (!(await driver.refExists(repo, input.repoRef))) {
    throw new RefNotFound(`No branch or tag ${input.repoRef} in ${repo.owner}/${repo.name}.`);
  }
}
