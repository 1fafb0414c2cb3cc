import { randomUUID } from "node:crypto";
import { inAuditedTransaction } from "../../core/audit/scope.ts";
import { conflict, notFound } from "../../core/errors.ts";
import { iso } from "../../core/shapes.ts";
import type { Executor } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import type { ProviderRow } from "../oauth-providers/store.ts";
import { visibleToken } from "../oauth-tokens/service.ts";
import type { TokenRow } from "../oauth-tokens/store.ts";
import type { TokenScope } from "../oauth-tokens/tenant.ts";
import type { AgentConnection } from "./schema.ts";
import {
  type AgentScope,
  type ConnectionRow,
  connectionRows,
  deleteConnectionRow,
  insertConnectionRow,
} from "./store.ts";

export type { AgentScope };

function toConnection(row: ConnectionRow, token: TokenRow, provider: ProviderRow): AgentConnection {
  return {
    id: row.id,
    agent_id: row.agentId,
    oauth_token_id: row.oauthTokenRef,
    provider_id: provider.providerId,
    created_by: row.createdBy,
    provider_account_label: token.providerAccountLabel,
    scopes: token.scopes,
    expires_at: iso(token.expiresAt),
    created_at: iso(row.createdAt),
  };
}

export async function listConnections(exec: Executor, scope: AgentScope): Promise<AgentConnection[]> {
  const list = await connectionRows(exec, scope);
  return list.map((r) => toConnection(r.connection, r.token, r.provider));
}

/**
 * Links a token the caller's tenant sees to the agent; an agent has one connection per provider.
 * A workspace's agent may use the organization's tokens or its own workspace's, never another
 * workspace's: those are not found from this workspace.
 */
export async function createConnection(
  exec: Executor,
  scope: AgentScope,
  tokens: TokenScope,
  createdBy: string,
  tokenId: string,
): Promise<AgentConnection> {
  const { token, provider } = await visibleToken(exec, tokens, tokenId);
  if (token.tenantWorkspaceId !== null && token.tenantWorkspaceId !== scope.workspaceId) {
    throw notFound(
      "OAuth token not found in this workspace: it belongs to another workspace, whose agents alone may use it.",
    );
  }
  try {
    const row = await insertConnectionRow(exec, {
      id: randomUUID(),
      organizationId: scope.organizationId,
      workspaceId: scope.workspaceId,
      agentId: scope.agentId,
      oauthTokenRef: token.id,
      providerRef: provider.id,
      createdBy,
    });
    return toConnection(row, token, provider);
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw conflict(
        `Agent "${scope.agentId}" already has a connection for provider "${provider.providerId}"; delete it first.`,
      );
    }
    throw err;
  }
}

export async function deleteConnection(
  exec: Executor,
  scope: AgentScope,
  connectionId: string,
): Promise<void> {
  if (!(await inAuditedTransaction(exec, (tx) => deleteConnectionRow(tx, scope, connectionId))))
    throw notFound("Agent connection not found.");
}

/** The agent's connection for a provider, with its token, if it has one. */
export async function connectionFor(
  exec: Executor,
  scope: AgentScope,
  providerRef: string,
): Promise<{ connection: ConnectionRow; token: TokenRow } | undefined> {
  const [found] = await connectionRows(exec, scope, providerRef);
  return found && { connection: found.connection, token: found.token };
}
