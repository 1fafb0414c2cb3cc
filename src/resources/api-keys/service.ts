import { inAuditedTransaction } from "../../core/audit/scope.ts";
import type { OrganizationCaller } from "../../core/callers.ts";
import { forbidden, invalid, notFound } from "../../core/errors.ts";
import { iso } from "../../core/shapes.ts";
import type { Executor } from "../../db/client.ts";
import type { Role } from "../../db/schema/identity.ts";
import { isWorkspaceOf } from "../workspaces/store.ts";
import { displayPrefix, generateApiKey, hashApiKey } from "./key-material.ts";
import type { ApiKey, ApiKeyCreated } from "./schema.ts";
import {
  apiKeyRows,
  findApiKeyRow,
  insertApiKeyRow,
  listenerOfOrganization,
  markRevoked,
  type ApiKeyRow as Row,
} from "./store.ts";

export function toApiKey(row: Row): ApiKey {
  return {
    id: row.id,
    organization_id: row.organizationId,
    workspace_id: row.workspaceId,
    role: row.role,
    listener_id: row.listenerId,
    is_system: row.isSystem,
    description: row.description,
    prefix: row.prefix,
    created_at: iso(row.createdAt),
    revoked_at: iso(row.revokedAt),
  };
}

export interface NewKey {
  organizationId: string;
  role: Role;
  workspaceId?: string | null;
  /** Set exactly for role `listener`. */
  listenerId?: string | null;
  description?: string;
  isSystem?: boolean;
  /** A chosen key value (bootstrap); otherwise one is generated. */
  key?: string;
}

/** Inserts a key and returns it with its value, the only time the value is seen. */
export async function insertApiKey(exec: Executor, input: NewKey): Promise<ApiKeyCreated> {
  const key = input.key ?? generateApiKey();
  const row = await insertApiKeyRow(exec, {
    organizationId: input.organizationId,
    workspaceId: input.workspaceId ?? null,
    listenerId: input.listenerId ?? null,
    role: input.role,
    isSystem: input.isSystem ?? false,
    description: input.description ?? "",
    prefix: displayPrefix(key),
    keyHash: hashApiKey(key),
  });
  return { ...toApiKey(row), key };
}

type Caller = OrganizationCaller;

/** Creates a key for the caller's organization; a workspace-bound caller can only mint keys bound to its workspace. */
export async function createApiKey(
  exec: Executor,
  caller: Caller,
  body: { role: Role; description?: string; workspace_id?: string | null; listener_id?: string | null },
): Promise<ApiKeyCreated> {
  if (body.role === "listener") return createListenerKey(exec, caller, body);
  if (isSet(body.listener_id)) {
    throw invalid(["body", "listener_id"], "Only a key of role listener names a listener_id.");
  }
  const workspaceId = body.workspace_id ?? caller.boundWorkspaceId;
  if (caller.boundWorkspaceId !== null && workspaceId !== caller.boundWorkspaceId) {
    throw forbidden("A workspace-bound API key can only create keys bound to the same workspace.");
  }
  if (workspaceId !== null && !(await isWorkspaceOf(exec, caller.organizationId, workspaceId))) {
    throw invalid(["body", "workspace_id"], "Not a workspace of this organization.");
  }
  return insertAuditedKey(exec, {
    organizationId: caller.organizationId,
    role: body.role,
    workspaceId,
    description: body.description ?? "",
  });
}

/** A key created through the API: the key and the write's audit record commit together. */
const insertAuditedKey = (exec: Executor, input: NewKey) =>
  inAuditedTransaction(
    exec,
    (tx) => insertApiKey(tx, input),
    (k) => k.id,
  );

const isSet = (v: unknown): v is string => v !== undefined && v !== null;

/** A listener's key: bound to the listener's workspace, which the caller's key must reach. */
async function createListenerKey(
  exec: Executor,
  caller: Caller,
  body: { description?: string; workspace_id?: string | null; listener_id?: string | null },
): Promise<ApiKeyCreated> {
  if (!isSet(body.listener_id)) {
    throw invalid(["body", "listener_id"], "A key of role listener needs the listener_id it acts for.");
  }
  const listener = await listenerOfOrganization(exec, caller.organizationId, body.listener_id);
  if (!listener || (caller.boundWorkspaceId !== null && listener.workspace_id !== caller.boundWorkspaceId)) {
    throw invalid(["body", "listener_id"], `Listener ID ${body.listener_id} not found.`);
  }
  if (isSet(body.workspace_id) && body.workspace_id.toLowerCase() !== listener.workspace_id) {
    throw invalid(["body", "workspace_id"], "A listener's key is bound to the listener's workspace.");
  }
  return insertAuditedKey(exec, {
    organizationId: caller.organizationId,
    role: "listener",
    workspaceId: listener.workspace_id,
    listenerId: listener.id,
    description: body.description ?? "",
  });
}

export async function listApiKeys(exec: Executor, caller: Caller): Promise<ApiKey[]> {
  const list = await apiKeyRows(exec, caller.organizationId, caller.boundWorkspaceId);
  return list.map(toApiKey);
}

/** Revokes at once: the next request with the key is a 401. Revoking twice keeps the first time. */
export async function revokeApiKey(exec: Executor, caller: Caller, id: string): Promise<ApiKey> {
  const row = await findApiKeyRow(exec, caller.organizationId, id);
  if (!row || (caller.boundWorkspaceId !== null && row.workspaceId !== caller.boundWorkspaceId)) {
    throw notFound("API key not found.");
  }
  if (row.revokedAt) return toApiKey(row);
  return toApiKey((await inAuditedTransaction(exec, (tx) => markRevoked(tx, id))) ?? row);
}
