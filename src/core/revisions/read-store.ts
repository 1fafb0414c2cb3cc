import { type SQL, sql } from "drizzle-orm";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { sqlList } from "../../db/sql.ts";
import type { SecretReference, Source } from "../model.ts";
import { type RevisionStatus, TERMINAL_REVISION_STATUSES } from "./states.ts";

/** Reading revisions: a list page, a record, a status (locked or not), and what the reconciler asks of them. */

/**
 * The only module that writes SQL on `revisions` and `revision_secrets` (leases and claims aside:
 * reconciler/store.ts). Every status change goes through `writeRevisionStatus`.
 */

/** What a list page needs of the query: statuses narrow; `remote` keeps listener-served (or other) ones. */
export interface RevisionPage {
  statuses?: readonly string[];
  remote?: boolean;
  limit: number;
  offset: number;
}

/**
 * A page of a deployment's revisions of the caller's workspace (the join is the tenancy check),
 * newest first (by sequence number), as the response body PostgreSQL assembles from the stored
 * records; `count` is the number on the page.
 */
export async function revisionPage(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  page: RevisionPage,
): Promise<{ body: string; count: number }> {
  const where: SQL[] = [sql`d.workspace_id = ${workspaceId}`, sql`r.deployment_id = ${deploymentId}`];
  if (page.statuses !== undefined) where.push(sql`r.status IN (${sqlList(page.statuses)})`);
  if (page.remote !== undefined) {
    where.push(page.remote ? sql`r.listener_id IS NOT NULL` : sql`r.listener_id IS NULL`);
  }
  const [row] = await rows<{ body: string; count: number }>(
    exec,
    sql`SELECT '{"resources":[' || coalesce(string_agg(p.record, ',' ORDER BY p.seq DESC), '')
               || '],"offset":' || (${page.offset}::int + count(*)) || '}' AS body, count(*)::int AS count
          FROM (SELECT r.record, r.seq FROM revisions r JOIN deployments d ON d.id = r.deployment_id
                 WHERE ${sql.join(where, sql` AND `)}
                 ORDER BY r.seq DESC LIMIT ${page.limit} OFFSET ${page.offset}) p`,
  );
  return row ?? { body: `{"resources":[],"offset":${page.offset}}`, count: 0 };
}

/** A revision's stored record (JSON text), when it is that deployment's, of that workspace. */
export async function findRevisionRecord(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<string | undefined> {
  const [row] = await rows<{ record: string }>(
    exec,
    sql`SELECT r.record FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE d.workspace_id = ${workspaceId} AND r.deployment_id = ${deploymentId} AND r.id = ${revisionId}`,
  );
  return row?.record;
}

/** The status of a revision of that deployment of that workspace (undefined: no such revision there). */
export async function revisionStatusIn(
  exec: Reader,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionStatus | undefined> {
  const [row] = await rows<{ status: RevisionStatus }>(
    exec,
    sql`SELECT r.status FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE r.id = ${revisionId} AND d.id = ${deploymentId} AND d.workspace_id = ${workspaceId}`,
  );
  return row?.status;
}

/** The status of a revision of the workspace, its row locked for the rest of the transaction. */
export async function lockRevisionStatus(
  tx: Executor,
  workspaceId: string,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionStatus | undefined> {
  const [row] = await rows<{ status: RevisionStatus }>(
    tx,
    sql`SELECT r.status FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE d.workspace_id = ${workspaceId} AND r.deployment_id = ${deploymentId} AND r.id = ${revisionId}
         FOR UPDATE OF r`,
  );
  return row?.status;
}

export async function revisionStatus(exec: Reader, id: string): Promise<RevisionStatus | undefined> {
  const [row] = await rows<{ status: RevisionStatus }>(
    exec,
    sql`SELECT status FROM revisions WHERE id = ${id}`,
  );
  return row?.status;
}

/** What a new revision copies from an existing one. */
export interface RevisionContentRow {
  source: Source;
  source_revision_config: Record<string, unknown>;
  resource_spec: Record<string, unknown> | null;
  secret_references: SecretReference[] | null;
}

export async function revisionContentRow(
  exec: Reader,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionContentRow | undefined> {
  const [row] = await rows<RevisionContentRow>(
    exec,
    sql`SELECT source, source_revision_config, resource_spec, secret_references
          FROM revisions WHERE id = ${revisionId} AND deployment_id = ${deploymentId}`,
  );
  return row;
}

/** Whether a newer revision of the deployment is queued and not started: this one is then skipped. */
export async function newerRevisionWaiting(
  exec: Reader,
  deploymentId: string,
  seq: number,
): Promise<boolean> {
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM revisions WHERE deployment_id = ${deploymentId} AND seq > ${seq}
           AND status IN (${sqlList(["QUEUED", "AWAITING_BUILD"])}) LIMIT 1`,
  );
  return found.length > 0;
}

/** A deployment's revisions that have not ended, with their status. */
export function unfinishedRevisions(
  exec: Reader,
  deploymentId: string,
): Promise<{ id: string; status: RevisionStatus }[]> {
  return rows(
    exec,
    sql`SELECT id, status FROM revisions
         WHERE deployment_id = ${deploymentId} AND status NOT IN (${sqlList([...TERMINAL_REVISION_STATUSES])})`,
  );
}

export async function revisionIdsOf(exec: Reader, deploymentId: string): Promise<string[]> {
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM revisions WHERE deployment_id = ${deploymentId}`,
  );
  return found.map((r) => r.id);
}
