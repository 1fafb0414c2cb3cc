import { sql } from "drizzle-orm";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { isoSql } from "../../db/sql.ts";

/**
 * The only module that writes SQL on `listeners`. A listener's status is not stored: it is
 * CONNECTED while `last_seen_at` is younger than the timeout the caller passes.
 */

export interface ListenerRow {
  id: string;
  workspace_id: string;
  compute_type: "k8s";
  compute_id: string;
  compute_config: { k8s_namespaces?: string[] | null };
  version: string | null;
  connected: boolean;
  last_seen_at: string | null;
  created_at: string;
  updated_at: string;
}

const cols = (timeoutS: number) =>
  sql`l.id, l.workspace_id, l.compute_type, l.compute_id, l.compute_config, l.version,
      (l.last_seen_at IS NOT NULL AND l.last_seen_at > now() - ${timeoutS}::int * interval '1 second') AS connected,
      ${sql.raw(isoSql("l.last_seen_at"))} AS last_seen_at, ${sql.raw(isoSql("l.created_at"))} AS created_at,
      ${sql.raw(isoSql("l.updated_at"))} AS updated_at`;

export function listenerRows(
  exec: Reader,
  workspaceId: string,
  timeoutS: number,
  page: { limit: number; offset: number },
): Promise<ListenerRow[]> {
  return rows<ListenerRow>(
    exec,
    sql`SELECT ${cols(timeoutS)} FROM listeners l WHERE l.workspace_id = ${workspaceId}
         ORDER BY l.created_at DESC, l.id DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
  );
}

export async function findListenerRow(
  exec: Reader,
  workspaceId: string,
  id: string,
  timeoutS: number,
): Promise<ListenerRow | undefined> {
  const [row] = await rows<ListenerRow>(
    exec,
    sql`SELECT ${cols(timeoutS)} FROM listeners l WHERE l.workspace_id = ${workspaceId} AND l.id = ${id}`,
  );
  return row;
}

/** The namespaces a listener serves (`compute_config.k8s_namespaces`): where it prunes. */
export async function listenerNamespaces(exec: Reader, id: string): Promise<string[]> {
  const [row] = await rows<{ compute_config: { k8s_namespaces?: string[] | null } }>(
    exec,
    sql`SELECT compute_config FROM listeners WHERE id = ${id}`,
  );
  return row?.compute_config.k8s_namespaces ?? [];
}

export interface NewListener {
  organizationId: string;
  workspaceId: string;
  computeId: string;
  computeConfig: Record<string, unknown>;
  version: string | null;
}

/** Throws the driver's unique violation on a taken compute_id (the service makes it a 409). */
export async function insertListener(exec: Executor, l: NewListener, timeoutS: number): Promise<ListenerRow> {
  const [row] = await rows<ListenerRow>(
    exec,
    sql`INSERT INTO listeners AS l (organization_id, workspace_id, compute_type, compute_id, compute_config, version)
        VALUES (${l.organizationId}, ${l.workspaceId}, 'k8s', ${l.computeId}, ${JSON.stringify(l.computeConfig)}::jsonb,
                ${l.version})
        RETURNING ${cols(timeoutS)}`,
  );
  if (!row) throw new Error("storing the listener returned no row");
  return row;
}

/** The row locked for the rest of the transaction (a PATCH checks the namespaces in use under it). */
export async function lockListener(exec: Executor, workspaceId: string, id: string, timeoutS: number) {
  const [row] = await rows<ListenerRow>(
    exec,
    sql`SELECT ${cols(timeoutS)} FROM listeners l WHERE l.workspace_id = ${workspaceId} AND l.id = ${id} FOR UPDATE`,
  );
  return row;
}

export async function updateListener(
  exec: Executor,
  id: string,
  set: { computeConfig: Record<string, unknown>; version: string | null },
  timeoutS: number,
): Promise<ListenerRow | undefined> {
  const [row] = await rows<ListenerRow>(
    exec,
    sql`UPDATE listeners AS l SET compute_config = ${JSON.stringify(set.computeConfig)}::jsonb,
               version = ${set.version}, updated_at = now()
         WHERE l.id = ${id} RETURNING ${cols(timeoutS)}`,
  );
  return row;
}

/** Deletes the listener; its API keys go with it (the foreign key cascades). */
export async function deleteListenerRow(exec: Executor, workspaceId: string, id: string): Promise<boolean> {
  const done = await rows<{ id: string }>(
    exec,
    sql`DELETE FROM listeners WHERE id = ${id} AND workspace_id = ${workspaceId} RETURNING id`,
  );
  return done.length === 1;
}

/** The listener was heard from now. */
export async function touchListener(exec: Executor, id: string): Promise<void> {
  await exec.execute(sql`UPDATE listeners SET last_seen_at = now() WHERE id = ${id}`);
}

/**
 * The desired-state version for a fingerprint of what the listener should run: bumped once when
 * the fingerprint differs from the stored one (any process may do it; the conditional update
 * makes concurrent polls agree), else the stored version.
 */
export async function desiredVersion(exec: Executor, id: string, hash: string): Promise<number> {
  const [bumped] = await rows<{ desired_version: number }>(
    exec,
    sql`UPDATE listeners SET desired_version = desired_version + 1, desired_hash = ${hash}
         WHERE id = ${id} AND desired_hash <> ${hash} RETURNING desired_version`,
  );
  if (bumped) return Number(bumped.desired_version);
  const [row] = await rows<{ desired_version: number }>(
    exec,
    sql`SELECT desired_version FROM listeners WHERE id = ${id}`,
  );
  return Number(row?.desired_version ?? 0);
}

/** Listeners heard from within the timeout (true) or not, with their ids: the leader's health pass. */
export function listenerLiveness(
  exec: Reader,
  timeoutS: number,
): Promise<{ id: string; connected: boolean }[]> {
  return rows(
    exec,
    sql`SELECT id, (last_seen_at IS NOT NULL AND last_seen_at > now() - ${timeoutS}::int * interval '1 second')
               AS connected
          FROM listeners`,
  );
}

/** The listener's namespaces, its row share-locked for the rest of the transaction (deployment create). */
export async function shareListener(
  exec: Executor,
  workspaceId: string,
  id: string,
): Promise<{ k8s_namespaces: string[] | null } | undefined> {
  const [row] = await rows<{ k8s_namespaces: string[] | null }>(
    exec,
    sql`SELECT compute_config->'k8s_namespaces' AS k8s_namespaces FROM listeners
         WHERE id = ${id} AND workspace_id = ${workspaceId} FOR SHARE`,
  );
  return row;
}
