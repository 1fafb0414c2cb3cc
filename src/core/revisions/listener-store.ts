import { sql } from "drizzle-orm";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { uuidList } from "../../db/sql.ts";
import type { SecretReference, Source } from "../model.ts";

/** Revisions served by listeners: what each should run, and what its cluster reports back. */

/**
 * What a listener should run: per deployment of it that is not being deleted, the newest revision
 * that is rolling out (DEPLOYING) or serves (DEPLOYED). A failed or interrupted rollout drops out,
 * so the previous revision is desired again.
 */
export function desiredPairs(
  exec: Reader,
  listenerId: string,
): Promise<{ deployment_id: string; revision_id: string }[]> {
  return rows(
    exec,
    sql`SELECT DISTINCT ON (r.deployment_id) r.deployment_id, r.id AS revision_id
          FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE r.listener_id = ${listenerId} AND r.status IN ('DEPLOYING', 'DEPLOYED')
           AND d.status <> 'AWAITING_DELETE'
         ORDER BY r.deployment_id, r.seq DESC`,
  );
}

export interface RemoteRevisionRow {
  revision_id: string;
  deployment_id: string;
  name: string;
  deployment_type: string;
  namespace: string | null;
  source: Source;
  source_revision_config: Record<string, unknown>;
  image_ref: string | null;
  health_path: string | null;
  workspace_id: string;
  resource_spec: Record<string, unknown> | null;
  secret_references: SecretReference[] | null;
}

/** What a listener is told of each revision it should run. */
export function remoteRevisionRows(
  exec: Reader,
  revisionIds: readonly string[],
): Promise<RemoteRevisionRow[]> {
  if (revisionIds.length === 0) return Promise.resolve([]);
  return rows<RemoteRevisionRow>(
    exec,
    sql`SELECT r.id AS revision_id, r.deployment_id, d.name, d.deployment_type,
               d.source_config->'listener_config'->>'k8s_namespace' AS namespace, r.source,
               r.source_revision_config, r.image_ref, r.health_path, d.workspace_id, r.resource_spec,
               r.secret_references
          FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE r.id IN (${uuidList(revisionIds)})
         ORDER BY d.name, d.id`,
  );
}

/** Of these ids, those of revisions the listener serves. */
export async function revisionsOfListener(
  exec: Reader,
  listenerId: string,
  revisionIds: readonly string[],
): Promise<Set<string>> {
  if (revisionIds.length === 0) return new Set();
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM revisions WHERE listener_id = ${listenerId} AND id IN (${uuidList(revisionIds)})`,
  );
  return new Set(found.map((r) => r.id));
}

/** The listener's last report of a revision (the worker rolling it out waits for one). */
export async function recordRemoteState(
  exec: Executor,
  revisionId: string,
  state: string,
  reason: string | null,
): Promise<void> {
  await exec.execute(
    sql`UPDATE revisions SET remote_state = ${state}, remote_reason = ${reason} WHERE id = ${revisionId}`,
  );
}

export async function remoteState(
  exec: Reader,
  revisionId: string,
): Promise<
  | {
      remote_state: string | null;
      remote_reason: string | null;
      listener_id: string | null;
      image_ref: string | null;
    }
  | undefined
> {
  const [row] = await rows<{
    remote_state: string | null;
    remote_reason: string | null;
    listener_id: string | null;
    image_ref: string | null;
  }>(
    exec,
    sql`SELECT remote_state, remote_reason, listener_id, image_ref FROM revisions WHERE id = ${revisionId}`,
  );
  return row;
}

/**
 * The image a revision was built into and pushed as (sources that are not images, run by a
 * listener), and the health path its app config names.
 */
export async function recordImageRef(
  exec: Executor,
  revisionId: string,
  imageRef: string,
  healthPath: string | null,
): Promise<void> {
  await exec.execute(
    sql`UPDATE revisions SET image_ref = ${imageRef}, health_path = ${healthPath} WHERE id = ${revisionId}`,
  );
}
