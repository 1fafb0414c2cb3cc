import { and, eq, isNull, lt } from "drizzle-orm";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import type { Executor } from "../../db/client.ts";
import { envelopeColumn } from "../../db/envelopes.ts";
import { oauthFlows } from "../../db/schema/oauth.ts";
import type { TokenTenant } from "../oauth-tokens/tenant.ts";

/** The only module that writes SQL on `oauth_flows`. The code verifier arrives already encrypted. */

export type FlowRow = typeof oauthFlows.$inferSelect;
export type NewFlowRow = typeof oauthFlows.$inferInsert;

/** Removes the flows that expired before `before` (finished ones are kept a while for `wait`). */
export async function deleteFlowsExpiredBefore(exec: Executor, before: Date): Promise<void> {
  await exec.delete(oauthFlows).where(lt(oauthFlows.expiresAt, before));
}

/**
 * The flows a tenant sees, like its tokens: an organization-level key its organization's, a
 * workspace-bound key its workspace's.
 */
const seenBy = (t: TokenTenant) =>
  and(
    eq(oauthFlows.organizationId, t.organizationId),
    t.workspaceId === null ? undefined : eq(oauthFlows.tenantWorkspaceId, t.workspaceId),
  );

export async function insertFlowRow(exec: Executor, values: NewFlowRow): Promise<void> {
  await exec.insert(oauthFlows).values(values);
}

/**
 * Consumes the flow with this state hash, once: a second call finds nothing. Given a tenant, only
 * the flows it sees match.
 */
export async function consumeFlow(
  exec: Executor,
  stateHash: string,
  tenant: TokenTenant | null,
): Promise<FlowRow | undefined> {
  const [flow] = await exec
    .update(oauthFlows)
    .set({ consumedAt: new Date() })
    .where(
      and(
        eq(oauthFlows.stateHash, stateHash),
        isNull(oauthFlows.consumedAt),
        tenant === null ? undefined : seenBy(tenant),
      ),
    )
    .returning();
  return flow;
}

/** How a flow ended: with the reason it failed, or with the token it stored. */
export type FlowOutcome =
  | { status: "failed"; failureReason: string }
  | { status: "completed"; tokenRef: string };

/** Records the outcome; the code verifier is no longer needed and is dropped. */
export async function finishFlow(exec: Executor, id: string, outcome: FlowOutcome): Promise<void> {
  await exec
    .update(oauthFlows)
    .set({ ...outcome, finishedAt: new Date(), codeVerifierEnc: null })
    .where(eq(oauthFlows.id, id));
}

/** The flow, if the tenant sees it. */
export async function flowOf(exec: Executor, tenant: TokenTenant, id: string): Promise<FlowRow | undefined> {
  const [flow] = await exec
    .select()
    .from(oauthFlows)
    .where(and(eq(oauthFlows.id, id), seenBy(tenant)));
  return flow;
}

/** The encrypted columns of this store's table, for key rotation. */
export const flowEnvelopes = (exec: Executor): EnvelopeColumn[] => [
  envelopeColumn(exec, oauthFlows, oauthFlows.codeVerifierEnc),
];
