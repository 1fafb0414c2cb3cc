import { and, asc, eq } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";
import { workspaces } from "../../db/schema/identity.ts";

/** The only module that writes SQL on `workspaces`. */

export type WorkspaceRow = typeof workspaces.$inferSelect;

export async function insertWorkspaceRow(
  exec: Executor,
  organizationId: string,
  name: string,
): Promise<WorkspaceRow> {
  const [row] = await exec.insert(workspaces).values({ organizationId, name }).returning();
  if (!row) throw new Error("storing the workspace returned no row");
  return row;
}

/** The organization's workspaces (only `onlyId` when one is given), oldest first. */
export function workspaceRows(exec: Executor, organizationId: string, onlyId: string | null) {
  const scope =
    onlyId === null
      ? eq(workspaces.organizationId, organizationId)
      : and(eq(workspaces.organizationId, organizationId), eq(workspaces.id, onlyId));
  return exec.select().from(workspaces).where(scope).orderBy(asc(workspaces.createdAt), asc(workspaces.id));
}

export async function isWorkspaceOf(exec: Executor, organizationId: string, id: string): Promise<boolean> {
  const [row] = await exec
    .select({ id: workspaces.id })
    .from(workspaces)
    .where(and(eq(workspaces.id, id), eq(workspaces.organizationId, organizationId)));
  return row !== undefined;
}
