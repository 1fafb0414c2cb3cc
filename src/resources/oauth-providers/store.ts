import { and, asc, eq } from "drizzle-orm";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import type { Executor } from "../../db/client.ts";
import { envelopeColumn } from "../../db/envelopes.ts";
import { oauthProviders } from "../../db/schema/oauth.ts";

/** The only module that writes SQL on `oauth_providers`. Secrets arrive here already encrypted. */

export type ProviderRow = typeof oauthProviders.$inferSelect;
export type NewProviderRow = typeof oauthProviders.$inferInsert;
/** The columns a PATCH may change. */
export type ProviderChanges = Pick<
  NewProviderRow,
  | "name"
  | "clientId"
  | "clientSecretEnc"
  | "authUrl"
  | "tokenUrl"
  | "usesPkce"
  | "codeChallengeMethod"
  | "apiBaseUrl"
>;

const bySlug = (organizationId: string, slug: string) =>
  and(eq(oauthProviders.organizationId, organizationId), eq(oauthProviders.providerId, slug));

export function providerRows(exec: Executor, organizationId: string): Promise<ProviderRow[]> {
  return exec
    .select()
    .from(oauthProviders)
    .where(eq(oauthProviders.organizationId, organizationId))
    .orderBy(asc(oauthProviders.createdAt), asc(oauthProviders.id));
}

/** The provider row by slug (locked for the transaction with `forUpdate`); another organization's is not found. */
export async function providerBySlug(
  exec: Executor,
  organizationId: string,
  slug: string,
  forUpdate = false,
): Promise<ProviderRow | undefined> {
  const q = exec.select().from(oauthProviders).where(bySlug(organizationId, slug));
  const [row] = await (forUpdate ? q.for("update") : q);
  return row;
}

export async function providerById(exec: Executor, id: string): Promise<ProviderRow | undefined> {
  const [row] = await exec.select().from(oauthProviders).where(eq(oauthProviders.id, id));
  return row;
}

export async function insertProviderRow(exec: Executor, values: NewProviderRow): Promise<ProviderRow> {
  const [row] = await exec.insert(oauthProviders).values(values).returning();
  if (!row) throw new Error("storing the provider returned no row");
  return row;
}

export async function updateProviderRow(
  exec: Executor,
  id: string,
  changes: ProviderChanges,
): Promise<ProviderRow | undefined> {
  const [row] = await exec
    .update(oauthProviders)
    .set({ ...changes, updatedAt: new Date() })
    .where(eq(oauthProviders.id, id))
    .returning();
  return row;
}

/** Deletes the provider (its tokens and flows go with it) and returns the row as it was. */
export async function deleteProviderRow(
  exec: Executor,
  organizationId: string,
  slug: string,
): Promise<ProviderRow | undefined> {
  const [row] = await exec.delete(oauthProviders).where(bySlug(organizationId, slug)).returning();
  return row;
}

/** The encrypted columns of this store's table, for key rotation. */
export const providerEnvelopes = (exec: Executor): EnvelopeColumn[] => [
  envelopeColumn(exec, oauthProviders, oauthProviders.clientSecretEnc),
];
