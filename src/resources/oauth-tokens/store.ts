import { and, asc, desc, eq, inArray, isNull, ne, sql } from "drizzle-orm";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import type { Executor } from "../../db/client.ts";
import { envelopeColumn } from "../../db/envelopes.ts";
import { oauthProviders, oauthTokens } from "../../db/schema/oauth.ts";
import type { ProviderRow } from "../oauth-providers/store.ts";

/**
 * The only module that writes SQL on `oauth_tokens`. Values arrive here already encrypted
 * (seal.ts seals them); this module never sees a token in the clear.
 */

export type TokenRow = typeof oauthTokens.$inferSelect;
export type NewTokenRow = typeof oauthTokens.$inferInsert;
export type TokenChanges = Partial<
  Omit<NewTokenRow, "id" | "organizationId" | "tenantWorkspaceId" | "providerRef" | "userId">
>;

/**
 * Whose grant a token is: its tenant (organization, and workspace or null for the organization's
 * own), provider, end user label and agent ("" for none). A subject may hold several tokens.
 */
export interface Subject {
  organizationId: string;
  tenantWorkspaceId: string | null;
  providerRef: string;
  userId: string;
  agentId: string;
}

/** The token by id, locked for the rest of the transaction with `forUpdate`. */
export async function tokenById(
  exec: Executor,
  id: string,
  forUpdate = false,
): Promise<TokenRow | undefined> {
  const q = exec.select().from(oauthTokens).where(eq(oauthTokens.id, id));
  const [row] = await (forUpdate ? q.for("update") : q);
  return row;
}

/** Filters for tokens read with their providers; each given field must match. */
export interface TokenFilter {
  id?: string;
  organizationId?: string;
  /** The tenant's workspace; null: the organization's own tokens only; omitted: any. */
  tenantWorkspaceId?: string | null;
  userId?: string;
  agentId?: string;
  workspaceId?: string;
  providerRef?: string;
  /** The provider's slug (`provider_id`). */
  providerSlug?: string;
  providerType?: string;
  /** Only tokens that are not broken (their provider refused a refresh for good). */
  usable?: boolean;
}

export interface TokenWithProvider {
  token: TokenRow;
  provider: ProviderRow;
}

function matching(f: TokenFilter) {
  const tenant = f.tenantWorkspaceId;
  return and(
    f.id === undefined ? undefined : eq(oauthTokens.id, f.id),
    f.organizationId === undefined ? undefined : eq(oauthTokens.organizationId, f.organizationId),
    tenant === undefined
      ? undefined
      : tenant === null
        ? isNull(oauthTokens.tenantWorkspaceId)
        : eq(oauthTokens.tenantWorkspaceId, tenant),
    f.userId === undefined ? undefined : eq(oauthTokens.userId, f.userId),
    f.agentId === undefined ? undefined : eq(oauthTokens.agentId, f.agentId),
    f.workspaceId === undefined ? undefined : eq(oauthTokens.workspaceId, f.workspaceId),
    f.providerRef === undefined ? undefined : eq(oauthTokens.providerRef, f.providerRef),
    f.providerSlug === undefined ? undefined : eq(oauthProviders.providerId, f.providerSlug),
    f.providerType === undefined ? undefined : eq(oauthProviders.providerType, f.providerType),
    f.usable === true ? isNull(oauthTokens.brokenAt) : undefined,
  );
}

const withProviders = (exec: Executor, f: TokenFilter) =>
  exec
    .select({ token: oauthTokens, provider: oauthProviders })
    .from(oauthTokens)
    .innerJoin(oauthProviders, eq(oauthProviders.id, oauthTokens.providerRef))
    .where(matching(f));

/** Matching tokens with their providers, oldest first. */
export function tokensWithProviders(
  exec: Executor,
  f: TokenFilter,
  limit?: number,
): Promise<TokenWithProvider[]> {
  const q = withProviders(exec, f).orderBy(asc(oauthTokens.createdAt), asc(oauthTokens.id));
  return limit === undefined ? q : q.limit(limit);
}

/**
 * The matching token to hand out: the default, else the most recently renewed one. (The one
 * query both `authenticate` paths use: by subject, and by `token_id`.)
 */
export async function pickToken(exec: Executor, f: TokenFilter): Promise<TokenRow | undefined> {
  const [found] = await withProviders(exec, f)
    // A broken token only when there is no other: a flow then renews (repairs) it in place.
    .orderBy(
      sql`${oauthTokens.brokenAt} IS NULL DESC`,
      desc(oauthTokens.isDefault),
      desc(oauthTokens.updatedAt),
      asc(oauthTokens.id),
    )
    .limit(1);
  return found?.token;
}

export async function insertTokenRow(exec: Executor, values: NewTokenRow): Promise<TokenRow> {
  const [row] = await exec.insert(oauthTokens).values(values).returning();
  if (!row) throw new Error("storing the token returned no row");
  return row;
}

/** Updates the token (only if it is of `providerRef`, when one is given); undefined when none matched. */
export async function updateTokenRow(
  exec: Executor,
  id: string,
  changes: TokenChanges,
  providerRef?: string,
): Promise<TokenRow | undefined> {
  const [row] = await exec
    .update(oauthTokens)
    .set(changes)
    .where(
      and(
        eq(oauthTokens.id, id),
        providerRef === undefined ? undefined : eq(oauthTokens.providerRef, providerRef),
      ),
    )
    .returning();
  return row;
}

export async function deleteTokenRows(exec: Executor, ids: string[]): Promise<void> {
  if (ids.length > 0) await exec.delete(oauthTokens).where(inArray(oauthTokens.id, ids));
}

/**
 * Makes a token its subject's default and clears the others. The subject's rows are locked first
 * so that two concurrent changes run one after the other; the old default is cleared before the
 * new one is set because the unique index is checked row by row.
 */
export async function makeDefault(exec: Executor, row: TokenRow): Promise<TokenRow> {
  const subject = matching({
    providerRef: row.providerRef,
    tenantWorkspaceId: row.tenantWorkspaceId,
    userId: row.userId,
    agentId: row.agentId,
  });
  return exec.transaction(async (tx) => {
    await tx.select({ id: oauthTokens.id }).from(oauthTokens).where(subject).for("update");
    await tx
      .update(oauthTokens)
      .set({ isDefault: false })
      .where(and(subject, eq(oauthTokens.isDefault, true), ne(oauthTokens.id, row.id)));
    const [updated] = await tx
      .update(oauthTokens)
      .set({ isDefault: true })
      .where(eq(oauthTokens.id, row.id))
      .returning();
    return updated ?? row;
  });
}

/** The encrypted columns of this store's table, for key rotation. */
export const tokenEnvelopes = (exec: Executor): EnvelopeColumn[] => [
  envelopeColumn(exec, oauthTokens, oauthTokens.accessTokenEnc),
  envelopeColumn(exec, oauthTokens, oauthTokens.refreshTokenEnc),
];
