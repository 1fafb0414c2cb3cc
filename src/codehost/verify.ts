import type { AppDeps } from "../deps.ts";
import { invalid } from "../http/errors.ts";
import { driverFor } from "./drivers.ts";
import { findRepository, fullRefName } from "./interface.ts";
import { findIntegration } from "./store.ts";

/**
 * Checks a codehost source before a deployment or revision uses it: the integration is this
 * organization's, the repository is one it makes available, and the ref exists there. Each
 * failure is a 422 naming the field; a host that cannot answer is a 502.
 */
export async function verifyCodehostSource(
  deps: AppDeps,
  organizationId: string,
  input: { integrationId: string; repoUrl: string; repoRef: string },
): Promise<void> {
  const integration = await findIntegration(deps.db.orm, input.integrationId, organizationId);
  if (!integration) {
    throw invalid(
      ["body", "source_config", "integration_id"],
      "Not a code-host integration of this organization.",
    );
  }
  const driver = driverFor(deps.config, integration);
  const repo = findRepository(await driver.listRepositories(), input.repoUrl);
  if (!repo) {
    throw invalid(
      ["body", "source_config", "repo_url"],
      "Not a repository of this integration: use a `url` from GET /v1/integrations/forge/codehost/{integration_id}/repos.",
    );
  }
  if (fullRefName(input.repoRef) === undefined) {
    throw invalid(
      ["body", "source_revision_config", "repo_ref"],
      "Must be a branch name or refs/tags/<tag>.",
    );
  }
  if (!(await driver.refExists(repo, input.repoRef))) {
    throw invalid(
      ["body", "source_revision_config", "repo_ref"],
      `No branch or tag ${input.repoRef} in ${repo.owner}/${repo.name}.`,
    );
  }
}
