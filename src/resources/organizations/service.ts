import { inAuditedTransaction } from "../../core/audit/scope.ts";
import { conflict } from "../../core/errors.ts";
import { iso } from "../../core/shapes.ts";
import type { Executor, Orm } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import { insertApiKey } from "../api-keys/service.ts";
import { insertWorkspace } from "../workspaces/service.ts";
import type { Organization, OrganizationCreated } from "./schema.ts";
import {
  firstOrganization,
  insertOrganizationRow,
  organizationRows,
  type OrganizationRow as Row,
  setDefaultWorkspace,
} from "./store.ts";

export function toOrganization(row: Row): Organization {
  return {
    id: row.id,
    name: row.name,
    created_at: iso(row.createdAt),
    default_workspace_id: row.defaultWorkspaceId,
  };
}

export interface NewOrganization {
  name: string;
  /** The first key's value, when the caller chooses it (bootstrap). */
  key?: string;
  isSystem?: boolean;
}

/** An organization with its `default` workspace and a first admin key, in one transaction. */
export async function createOrganization(orm: Orm, input: NewOrganization): Promise<OrganizationCreated> {
  try {
    return await inAuditedTransaction(
      orm,
      async (tx) => {
        const created = await insertOrganizationRow(tx, input.name);
        const ws = await insertWorkspace(tx, created.id, "default");
        const withDefault = await setDefaultWorkspace(tx, created.id, ws.id);
        const key = await insertApiKey(tx, {
          organizationId: created.id,
          role: "admin",
          isSystem: input.isSystem ?? false,
          description: input.isSystem ? "bootstrap system key" : "first admin key",
          key: input.key,
        });
        return { ...toOrganization(withDefault), api_key: key };
      },
      (org) => org.id,
    );
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`An organization named "${input.name}" already exists.`);
    throw err;
  }
}

/** System keys see every organization; others see their own. */
export async function listOrganizations(
  exec: Executor,
  caller: { organizationId: string; isSystem: boolean },
): Promise<Organization[]> {
  const list = await organizationRows(exec, caller.isSystem ? null : caller.organizationId);
  return list.map(toOrganization);
}

/**
 * The install's first (oldest) organization: the only one whose code may run where no sandbox is
 * usable. Organizations are never deleted, so callers may keep the answer.
 */
export async function firstOrganizationId(orm: Orm): Promise<string | undefined> {
  return (await firstOrganization(orm))?.id;
}
