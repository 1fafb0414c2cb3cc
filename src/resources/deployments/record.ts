import { notFound } from "../../core/errors.ts";
import type { Reader } from "../../db/client.ts";
import type { REVISION_FIELDS } from "./rules.ts";
import { findDeploymentRecord, type StoredRecord } from "./store.ts";

/**
 * The Deployment and Revision records themselves are built by PostgreSQL and stored beside their
 * rows (migration 0008: `slipway_deployment_record`, `slipway_revision_record`); reads send them
 * as they are. What remains here is how a revision's config is stored.
 */

/** Stored source_revision_config: all five keys, null when unset. */
export function storedRevisionConfig(
  values: Record<(typeof REVISION_FIELDS)[number], string | null>,
  commitSha: string | null,
): Record<string, string | null> {
  return { ...values, repo_commit_sha: commitSha };
}

/** GET /v2/deployments/{id}: the stored record and its ETag; 404 when the workspace has no such deployment. */
export async function getDeploymentRecord(
  exec: Reader,
  workspaceId: string,
  id: string,
): Promise<StoredRecord> {
  const found = await findDeploymentRecord(exec, workspaceId, id);
  if (!found) throw notFound("Deployment not found.");
  return found;
}
