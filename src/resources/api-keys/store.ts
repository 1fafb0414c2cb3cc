import { and, asc, eq, sql } from "drizzle-orm";
import type { KeyRow } from "../../core/callers.ts";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { apiKeys } from "../../db/schema/identity.ts";

/** The only module that writes SQL on `api_keys`. */

export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type NewApiKeyRow = typeof apiKeys.$inferInsert;

export async function insertApiKeyRow(exec: Executor, values: NewApiKeyRow): Promise<ApiKeyRow> {
  const [row] = await exec.insert(apiKeys).values(values).returning();
  if (!row) throw new Error("storing the API key returned no row");
  return row;
}

/** The organization's keys (only those bound to `workspaceId` when one is given), oldest first. */
export function apiKeyRows(exec: Executor, organizationId: string, workspaceId: string | null) {
  const scope =
    workspaceId === null
      ? eq(apiKeys.organizationId, organizationId)
      : and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.workspaceId, workspaceId));
  return exec.select().from(apiKeys).where(scope).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
}

export async function findApiKeyRow(
  exec: Executor,
  organizationId: string,
  id: string,
): Promise<ApiKeyRow | undefined> {
  const [row] = await exec
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, id), eq(apiKeys.organizationId, organizationId)));
  return row;
}

export async function markRevoked(exec: Executor, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await exec
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(eq(apiKeys.id, id))
    .returning();
  return row;
}

export async function apiKeyExists(exec: Executor, keyHash: string): Promise<boolean> {
  const [row] = await exec.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.keyHash, keyHash));
  return row !== undefined;
}

/** The keys of a listener (deleted with it: their ids leave every auth cache). */
export async function listenerKeyIds(exec: Executor, listenerId: string): Promise<string[]> {
  const found = await exec.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.listenerId, listenerId));
  return found.map((r) => r.id);
}

/** The key, its organization's default workspace, and whether `tenant` is one of its workspaces. */
export async function keyByHash(
  exec: Reader,
  keyHash: string,
  tenant: string | null,
): Promise<KeyRow | undefined> {
  const [row] = await rows<KeyRow>(
    exec,
    sql`SELECT k.id, k.organization_id, k.workspace_id, k.role, k.listener_id, k.is_system,
               (k.revoked_at IS NOT NULL) AS revoked, o.default_workspace_id,
               (SELECT w.id FROM workspaces w WHERE w.id = ${tenant}::uuid AND w.organization_id = k.organization_id)
                 AS requested_workspace
          FROM api_keys k JOIN organizations o ON o.id = k.organization_id
         WHERE k.key_hash = ${keyHash}`,
  );
  return row;
}

/**
 * The listener a listener key is minted for: one of the organization, whatever its workspace (a
 * read of `listeners`, which the listeners store writes).
 */
export async function listenerOfOrganization(
  exec: Reader,
  organizationId: string,
  id: string,
): Promise<{ id: string; workspace_id: string } | undefined> {
  const [row] = await rows<{ id: string; workspace_id: string }>(
    exec,
    sql`SELECT id, workspace_id FROM listeners WHERE id = ${id} AND organization_id = ${organizationId}`,
  );
  return row;
}
