import { inAuditedTransaction } from "../../core/audit/scope.ts";
import { conflict } from "../../core/errors.ts";
import { iso } from "../../core/shapes.ts";
import type { Executor } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import type { Workspace } from "./schema.ts";
import { insertWorkspaceRow, type WorkspaceRow as Row, workspaceRows } from "./store.ts";

export function toWorkspace(row: Row): Workspace {
  return { id: row.id, name: row.name, organization_id: row.organizationId, created_at: iso(row.createdAt) };
}

export async function insertWorkspace(
  exec: Executor,
  organizationId: string,
  name: string,
): Promise<Workspace> {
  try {
    return toWorkspace(await insertWorkspaceRow(exec, organizationId, name));
  } catch (err) {
    if (isUniqueViolation(err))
      throw conflict(`A workspace named "${name}" already exists in this organization.`);
    throw err;
  }
}

/** POST /v1/workspaces: the workspace and the write's audit record commit together. */
export function createWorkspace(exec: Executor, organizationId: string, name: string): Promise<Workspace> {
  return inAuditedTransaction(
    exec,
    (tx) => insertWorkspace(tx, organizationId, name),
    (w) => w.id,
  );
}

/** A workspace-bound key sees only its own workspace. */
export async function listWorkspaces(
  exec: Executor,
  caller: { organizationId: string; boundWorkspaceId: string | null },
): Promise<Workspace[]> {
  const list = await workspaceRows(exec, caller.organizationId, caller.boundWorkspaceId);
  return list.map(toWorkspace);
}
