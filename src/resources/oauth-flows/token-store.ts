import { randomUUID } from "node:crypto";
import { and, asc, eq } from "drizzle-orm";
import type { Keyring } from "../../crypto/envelope.ts";
import { encryptionContext } from "../../crypto/registry.ts";
import type { Executor } from "../../db/client.ts";
import { oauthProviders, oauthTokens } from "../../db/schema/oauth.ts";
import { badGateway, notFound } from "../../http/errors.ts";
import { iso } from "../../http/schemas.ts";
import { OAuthCallFailed, refreshTokens, type TokenSet } from "../../oauth/client.ts";
import type { ProviderRow } from "../oauth-providers/service.ts";
import { type FlowEnv, providerClient } from "./env.ts";
import type { OAuthToken, TokensQuery } from "./schema.ts";

export type TokenRow = typeof oauthTokens.$inferSelect;

/** Who a token belongs to; agent "" means none. */
export interface Subject {
  organizationId: string;
  providerRef: string;
  userId: string;
  agentId: string;
}

const context = (column: "access_token_enc" | "refresh_token_enc", id: string) =>
  encryptionContext("oauth_tokens", column, id);

/** Fields of a completed result: the access token itself and what a caller needs to use it. */
export interface IssuedToken {
  token: string;
  token_id: string;
  token_type: string;
  expires_at: string | null;
  scopes: string[];
}

export function issued(row: TokenRow, keyring: Keyring): IssuedToken {
  return {
    token: keyring.decrypt(row.accessTokenEnc, context("access_token_enc", row.id)),
    token_id: row.id,
    token_type: row.tokenType,
    expires_at: iso(row.expiresAt),
    scopes: row.scopes,
  };
}

/**
 * A token is renewed once less than a share of its lifetime is left (at most 30 s), so what is
 * handed out is still usable for a while.
 */
export function needsRefresh(row: TokenRow, now = Date.now()): boolean {
  if (row.expiresAt === null) return false;
  const lifetime = row.expiresAt.getTime() - row.issuedAt.getTime();
  const margin = Math.min(30_000, Math.max(0, lifetime / 2));
  return row.expiresAt.getTime() - margin <= now;
}

function sealed(keyring: Keyring, id: string, tokens: TokenSet, keepRefresh: string | null) {
  const now = new Date();
  return {
    tokenType: tokens.tokenType,
    accessTokenEnc: keyring.encrypt(tokens.accessToken, context("access_token_enc", id)),
    refreshTokenEnc:
      tokens.refreshToken === null
        ? keepRefresh
        : keyring.encrypt(tokens.refreshToken, context("refresh_token_enc", id)),
    expiresAt: tokens.expiresIn === null ? null : new Date(now.getTime() + tokens.expiresIn * 1000),
    issuedAt: now,
    updatedAt: now,
  };
}

/** Stores a fresh token set for a subject; a subject keeps its row (and id) across new consents. */
export async function saveTokens(
  exec: Executor,
  keyring: Keyring,
  subject: Subject,
  tokens: TokenSet,
  scopes: string[],
  issuer: string,
): Promise<TokenRow> {
  const id = randomUUID();
  const [inserted] = await exec
    .insert(oauthTokens)
    .values({ id, ...subject, scopes, issuer, ...sealed(keyring, id, tokens, null) })
    .onConflictDoNothing({ target: [oauthTokens.providerRef, oauthTokens.userId, oauthTokens.agentId] })
    .returning();
  if (inserted) return inserted;
  const [existing] = await exec
    .select()
    .from(oauthTokens)
    .where(
      and(
        eq(oauthTokens.providerRef, subject.providerRef),
        eq(oauthTokens.userId, subject.userId),
        eq(oauthTokens.agentId, subject.agentId),
      ),
    )
    .for("update");
  if (!existing) throw new Error("token row vanished while it was being replaced");
  const [updated] = await exec
    .update(oauthTokens)
    .set({ scopes, issuer, ...sealed(keyring, existing.id, tokens, null) })
    .where(eq(oauthTokens.id, existing.id))
    .returning();
  return updated as TokenRow;
}

export async function findToken(exec: Executor, subject: Subject): Promise<TokenRow | undefined> {
  const [row] = await exec
    .select()
    .from(oauthTokens)
    .where(
      and(
        eq(oauthTokens.organizationId, subject.organizationId),
        eq(oauthTokens.providerRef, subject.providerRef),
        eq(oauthTokens.userId, subject.userId),
        eq(oauthTokens.agentId, subject.agentId),
      ),
    );
  return row;
}

/**
 * The token, renewed first when it is (nearly) expired. Concurrent callers serialize on the row
 * lock and re-check after it, so one expiry causes one refresh. Null when the token cannot be
 * renewed (no refresh token, or the provider no longer accepts it): a new flow is needed.
 */
export async function usableToken(
  exec: Executor,
  env: FlowEnv,
  row: TokenRow,
  provider: ProviderRow,
): Promise<TokenRow | null> {
  if (!needsRefresh(row)) return row;
  if (row.refreshTokenEnc === null) return null;
  return exec.transaction(async (tx) => {
    const [locked] = await tx.select().from(oauthTokens).where(eq(oauthTokens.id, row.id)).for("update");
    if (!locked) return null;
    if (!needsRefresh(locked)) return locked;
    if (locked.refreshTokenEnc === null) return null;
    const refreshToken = env.keyring.decrypt(locked.refreshTokenEnc, context("refresh_token_enc", locked.id));
    let tokens: TokenSet;
    try {
      tokens = await refreshTokens(
        providerClient(provider, env.keyring),
        env.fetch,
        locked.issuer,
        refreshToken,
      );
    } catch (err) {
      if (err instanceof OAuthCallFailed && err.oauthError === "invalid_grant") {
        // The grant is gone (revoked or expired at the provider): forget it so a new flow starts.
        await tx.delete(oauthTokens).where(eq(oauthTokens.id, locked.id));
        return null;
      }
      throw badGateway(
        err instanceof OAuthCallFailed
          ? `Refreshing the token failed. ${err.message}`
          : "Refreshing the token failed.",
      );
    }
    const [updated] = await tx
      .update(oauthTokens)
      .set({
        scopes: tokens.scope ?? locked.scopes,
        ...sealed(env.keyring, locked.id, tokens, locked.refreshTokenEnc),
      })
      .where(eq(oauthTokens.id, locked.id))
      .returning();
    return updated as TokenRow;
  });
}

function toToken(row: TokenRow, providerSlug: string): OAuthToken {
  return {
    id: row.id,
    provider_id: providerSlug,
    user_id: row.userId,
    agent_id: row.agentId === "" ? null : row.agentId,
    scopes: row.scopes,
    token_type: row.tokenType,
    expires_at: iso(row.expiresAt),
    has_refresh_token: row.refreshTokenEnc !== null,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

/** A user's tokens (never their values), oldest first. */
export async function listTokens(
  exec: Executor,
  organizationId: string,
  q: TokensQuery,
): Promise<OAuthToken[]> {
  const filters = [eq(oauthTokens.organizationId, organizationId), eq(oauthTokens.userId, q.user_id)];
  if (q.provider !== undefined) filters.push(eq(oauthProviders.providerId, q.provider));
  if (q.agent_id !== undefined) filters.push(eq(oauthTokens.agentId, q.agent_id));
  const list = await exec
    .select({ token: oauthTokens, slug: oauthProviders.providerId })
    .from(oauthTokens)
    .innerJoin(oauthProviders, eq(oauthProviders.id, oauthTokens.providerRef))
    .where(and(...filters))
    .orderBy(asc(oauthTokens.createdAt), asc(oauthTokens.id));
  return list.map((r) => toToken(r.token, r.slug));
}

/** Forgets a stored token here (the provider is not told); returns its record. */
export async function deleteToken(exec: Executor, organizationId: string, id: string): Promise<OAuthToken> {
  return exec.transaction(async (tx) => {
    const [found] = await tx
      .select({ token: oauthTokens, slug: oauthProviders.providerId })
      .from(oauthTokens)
      .innerJoin(oauthProviders, eq(oauthProviders.id, oauthTokens.providerRef))
      .where(and(eq(oauthTokens.id, id), eq(oauthTokens.organizationId, organizationId)));
    if (!found) throw notFound("OAuth token not found.");
    await tx.delete(oauthTokens).where(eq(oauthTokens.id, id));
    return toToken(found.token, found.slug);
  });
}
