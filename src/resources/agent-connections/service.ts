import { randomUUID } from "node:crypto";
import { and, asc, eq } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import { agentConnections, oauthProviders, oauthTokens } from "../../db/schema/oauth.ts";
import { conflict, notFound } from "../../http/errors.ts";
import { iso } from "../../http/schemas.ts";
import type { TokenRow } from "../oauth-flows/token-store.ts";
import type { ProviderRow } from "../oauth-providers/service.ts";
import type { TokenOwner } from "../oauth-tokens/owner.ts";
import { ownedToken } from "../oauth-tokens/service.ts";
import type { AgentConnection } from "./schema.ts";

/** Where connections live: an agent is named within one workspace. */
export interface AgentScope {
  organizationId: string;
  workspaceId: string;
  agentId: string;
}

type ConnectionRow = typeof agentConnections.$inferSelect;

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

const inScope = (s: AgentScope) =>
  and(
    eq(agentConnections.organizationId, s.organizationId),
    eq(agentConnections.workspaceId, s.workspaceId),
    eq(agentConnections.agentId, s.agentId),
  );

async function connectionsWhere(exec: Executor, where: ReturnType<typeof and>) {
  return exec
    .select({ connection: agentConnections, token: oauthTokens, provider: oauthProviders })
    .from(agentConnections)
    .innerJoin(oauthTokens, eq(oauthTokens.id, agentConnections.oauthTokenRef))
    .innerJoin(oauthProviders, eq(oauthProviders.id, agentConnections.providerRef))
    .where(where)
    .orderBy(asc(agentConnections.createdAt), asc(agentConnections.id));
}

export async function listConnections(exec: Executor, scope: AgentScope): Promise<AgentConnection[]> {
  const list = await connectionsWhere(exec, inScope(scope));
  return list.map((r) => toConnection(r.connection, r.token, r.provider));
}

/** Links one of the owner's tokens to the agent; an agent has one connection per provider. */
export async function createConnection(
  exec: Executor,
  scope: AgentScope,
  owner: TokenOwner,
  tokenId: string,
): Promise<AgentConnection> {
  const { token, provider } = await ownedToken(exec, owner, tokenId);
  try {
    const [row] = await exec
      .insert(agentConnections)
      .values({
        id: randomUUID(),
        organizationId: scope.organizationId,
        workspaceId: scope.workspaceId,
        agentId: scope.agentId,
        oauthTokenRef: token.id,
        providerRef: provider.id,
        createdBy: owner.userId,
      })
      .returning();
    if (!row) throw new Error("storing the connection returned no row");
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
  const deleted = await exec
    .delete(agentConnections)
    .where(and(inScope(scope), eq(agentConnections.id, connectionId)))
    .returning({ id: agentConnections.id });
  if (deleted.length === 0) throw notFound("Agent connection not found.");
}

/** The agent's connection for a provider, with its token, if it has one. */
export async function connectionFor(
  exec: Executor,
  scope: AgentScope,
  providerRef: string,
): Promise<{ connection: ConnectionRow; token: TokenRow } | undefined> {
  const [found] = await connectionsWhere(
    exec,
    and(inScope(scope), eq(agentConnections.providerRef, providerRef)),
  );
  return found && { connection: found.connection, token: found.token };
}
