import { findDeploymentRecord, type StoredRecord } from "../../core/deployments/read-store.ts";
import { notFound } from "../../core/errors.ts";
import type { Reader } from "../../db/client.ts";

/**
 * The Deployment and Revision records themselves are built by PostgreSQL and stored beside their
 * rows (migration 0008: `slipway_deployment_record`, `slipway_revision_record`); reads send them
 * as they are.
 */

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
