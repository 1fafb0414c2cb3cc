import { and, asc, eq, type SQL } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";
import { agentConnections, oauthProviders, oauthTokens } from "../../db/schema/oauth.ts";
import type { ProviderRow } from "../oauth-providers/store.ts";
import type { TokenRow } from "../oauth-tokens/store.ts";

/** The only module that writes SQL on `agent_connections`. */

export type ConnectionRow = typeof agentConnections.$inferSelect;
export type NewConnectionRow = typeof agentConnections.$inferInsert;

/** Where connections live: an agent is named within one workspace. */
export interface AgentScope {
  organizationId: string;
  workspaceId: string;
  agentId: string;
}

const inScope = (s: AgentScope) =>
  and(
    eq(agentConnections.organizationId, s.organizationId),
    eq(agentConnections.workspaceId, s.workspaceId),
    eq(agentConnections.agentId, s.agentId),
  );

export interface ConnectionWithGrant {
  connection: ConnectionRow;
  token: TokenRow;
  provider: ProviderRow;
}

/** The agent's connections (only the one for `providerRef`, when given) with their tokens and providers. */
export function connectionRows(
  exec: Executor,
  scope: AgentScope,
  providerRef?: string,
): Promise<ConnectionWithGrant[]> {
  const where: (SQL | undefined)[] = [inScope(scope)];
  if (providerRef !== undefined) where.push(eq(agentConnections.providerRef, providerRef));
  return exec
    .select({ connection: agentConnections, token: oauthTokens, provider: oauthProviders })
    .from(agentConnections)
    .innerJoin(oauthTokens, eq(oauthTokens.id, agentConnections.oauthTokenRef))
    .innerJoin(oauthProviders, eq(oauthProviders.id, agentConnections.providerRef))
    .where(and(...where))
    .orderBy(asc(agentConnections.createdAt), asc(agentConnections.id));
}

export async function insertConnectionRow(exec: Executor, values: NewConnectionRow): Promise<ConnectionRow> {
  const [row] = await exec.insert(agentConnections).values(values).returning();
  if (!row) throw new Error("storing the connection returned no row");
  return row;
}

/** False when the agent has no such connection. */
export async function deleteConnectionRow(exec: Executor, scope: AgentScope, id: string): Promise<boolean> {
  const deleted = await exec
    .delete(agentConnections)
    .where(and(inScope(scope), eq(agentConnections.id, id)))
    .returning({ id: agentConnections.id });
  return deleted.length > 0;
}
