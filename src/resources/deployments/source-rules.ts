import type { CodehostConfig } from "../../codehost/drivers.ts";
import { IntegrationNotFound, RefNotFound, RepoNotFound } from "../../codehost/errors.ts";
import { verifyCodehostSource } from "../../codehost/verify.ts";
import type { Executor } from "../../db/client.ts";
import { invalid } from "../../http/errors.ts";

/**
 * A codehost source checked with its host, as a request names it: each thing the host does not
 * have is a 422 at the field that named it; a host that cannot answer stays HostUnavailable (502).
 */
export async function verifyCodehost(
  exec: Executor,
  config: CodehostConfig,
  organizationId: string,
  input: { integrationId: string; repoUrl: string; repoRef: string },
): Promise<void> {
  try {
    await verifyCodehostSource(exec, config, organizationId, input);
  } catch (err) {
    if (err instanceof IntegrationNotFound)
      throw invalid(["body", "source_config", "integration_id"], err.message);
    if (err instanceof RepoNotFound) throw invalid(["body", "source_config", "repo_url"], err.message);
    if (err instanceof RefNotFound)
      throw invalid(["body", "source_revision_config", "repo_ref"], err.message);
    throw err;
  }
}
