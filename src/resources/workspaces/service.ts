import { and, asc, eq } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import { workspaces } from "../../db/schema/identity.ts";
import { conflict } from "../../http/errors.ts";
import { iso } from "../../http/schemas.ts";
import type { Workspace } from "./schema.ts";

type Row = typeof workspaces.$inferSelect;

export function toWorkspace(row: Row): Workspace {
  return { id: row.id, name: row.name, organization_id: row.organizationId, created_at: iso(row.createdAt) };
}

export async function insertWorkspace(
  exec: Executor,
  organizationId: string,
  name: string,
): Promise<Workspace> {
  try {
    const [row] = await exec.insert(workspaces).values({ organizationId, name }).returning();
    return toWorkspace(row as Row);
  } catch (err) {
    if (isUniqueViolation(err))
      throw conflict(`A workspace named "${name}" already exists in this organization.`);
    throw err;
  }
}

/** A workspace-bound key sees only its own workspace. */
export async function listWorkspaces(
  exec: Executor,
  caller: { organizationId: string; boundWorkspaceId: string | null },
): Promise<Workspace[]> {
  const scope =
    caller.boundWorkspaceId === null
      ? eq(workspaces.organizationId, caller.organizationId)
      : and(eq(workspaces.organizationId, caller.organizationId), eq(workspaces.id, caller.boundWorkspaceId));
  const list = await exec
    .select()
    .from(workspaces)
    .where(scope)
    .orderBy(asc(workspaces.createdAt), asc(workspaces.id));
  return list.map(toWorkspace);
}
