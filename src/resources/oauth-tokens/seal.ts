import { randomUUID } from "node:crypto";
import { badGateway } from "../../core/errors.ts";
import { iso } from "../../core/shapes.ts";
import type { Keyring } from "../../crypto/envelope.ts";
import { encryptionContext } from "../../crypto/envelope.ts";
import type { Executor } from "../../db/client.ts";
import { OAuthCallFailed, refreshTokens, type TokenSet } from "../../oauth/client.ts";
import { grantedScopes } from "../../oauth/quirks.ts";
import { providerClient } from "../oauth-providers/service.ts";
import type { ProviderRow } from "../oauth-providers/store.ts";
import type { FlowEnv } from "./env.ts";
import { emitTokenEvent } from "./events.ts";
import {
  insertTokenRow,
  makeDefault,
  type Subject,
  type TokenRow,
  tokenById,
  updateTokenRow,
} from "./store.ts";

/**
 * What a flow does with tokens: seal and store a fresh set, hand one out, renew it when it is
 * (nearly) expired. The rows themselves are store.ts's; revocation (revoke.ts) opens them too.
 */

export const tokenContext = (column: "access_token_enc" | "refresh_token_enc", id: string) =>
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
    token: keyring.decrypt(row.accessTokenEnc, tokenContext("access_token_enc", row.id)),
    token_id: row.id,
    token_type: row.tokenType,
    expires_at: iso(row.expiresAt),
    scopes: row.scopes,
  };
}

/**
 * A token is renewed once less than a share of its lifetime is left (at most 30 s), so what is
 * handed out is still usable for a while; `marginMs` asks for a fixed margin instead (the proxy's
 * 60 s, so a call never leaves with a token about to lapse).
 */
export function needsRefresh(row: TokenRow, now = Date.now(), marginMs?: number): boolean {
  if (row.expiresAt === null) return false;
  const lifetime = row.expiresAt.getTime() - row.issuedAt.getTime();
  const margin = marginMs ?? Math.min(30_000, Math.max(0, lifetime / 2));
  return row.expiresAt.getTime() - margin <= now;
}

function sealed(keyring: Keyring, id: string, tokens: TokenSet, keepRefresh: string | null) {
  const now = new Date();
  return {
    tokenType: tokens.tokenType,
    accessTokenEnc: keyring.encrypt(tokens.accessToken, tokenContext("access_token_enc", id)),
    refreshTokenEnc:
      tokens.refreshToken === null
        ? keepRefresh
        : keyring.encrypt(tokens.refreshToken, tokenContext("refresh_token_enc", id)),
    expiresAt: tokens.expiresIn === null ? null : new Date(now.getTime() + tokens.expiresIn * 1000),
    issuedAt: now,
    updatedAt: now,
    // A fresh grant repairs a token its provider had refused.
    brokenAt: null,
    brokenReason: null,
  };
}

/** How a finished flow stores its tokens. */
export interface SaveOptions {
  /** Renew this token in place (its id, label and connections stay); null or gone: a new token. */
  targetId: string | null;
  makeDefault: boolean;
  workspaceId: string | null;
}

/** Stores a fresh token set: renews the target token, or adds a new token for the subject. */
export async function saveTokens(
  exec: Executor,
  keyring: Keyring,
  subject: Subject,
  tokens: TokenSet,
  scopes: string[],
  issuer: string,
  opts: SaveOptions,
): Promise<TokenRow> {
  let row: TokenRow | undefined;
  if (opts.targetId !== null) {
    row = await updateTokenRow(
      exec,
      opts.targetId,
      {
        scopes,
        issuer,
        ...(opts.workspaceId === null ? {} : { workspaceId: opts.workspaceId }),
        ...sealed(keyring, opts.targetId, tokens, null),
      },
      subject.providerRef,
    );
  }
  if (!row) {
    const id = randomUUID();
    row = await insertTokenRow(exec, {
      id,
      ...subject,
      scopes,
      issuer,
      workspaceId: opts.workspaceId,
      ...sealed(keyring, id, tokens, null),
    });
  }
  return opts.makeDefault ? makeDefault(exec, row) : row;
}

type Renewal =
  | { kind: "ok"; row: TokenRow | null }
  | { kind: "broken"; row: TokenRow }
  | { kind: "failed"; message: string };

/** When to renew: when (nearly) expired, or (after the provider refused it) when it is still the one refused. */
export interface RenewWhen {
  /** A fixed margin before expiry (else needsRefresh's share of the lifetime). */
  marginMs?: number;
  /** The provider refused this access token (its issued_at): renew unless someone already did. */
  rejectedIssuedAt?: Date;
}

const due = (row: TokenRow, when: RenewWhen) =>
  when.rejectedIssuedAt !== undefined
    ? row.issuedAt.getTime() <= when.rejectedIssuedAt.getTime()
    : needsRefresh(row, Date.now(), when.marginMs);

/**
 * The token, renewed first when it is due. Concurrent callers serialize on the row lock and
 * re-check after it, so one expiry (or one refused token) causes one refresh. Null when the token
 * cannot be renewed: no refresh token, or the provider refused the refresh for good, in which case
 * the token is kept, marked broken with the provider's reason (shown to people, never handed out,
 * repaired by the next flow that renews it), and `oauth.token.refresh_failed` is sent. Any other
 * failure is recorded as the token's last error and is a 502.
 */
export async function usableToken(
  exec: Executor,
  env: FlowEnv,
  row: TokenRow,
  provider: ProviderRow,
  when: RenewWhen = {},
): Promise<TokenRow | null> {
  if (row.brokenAt !== null) return null;
  if (!due(row, when)) return row;
  if (row.refreshTokenEnc === null) return null;
  const outcome = await exec.transaction(async (tx): Promise<Renewal> => {
    const locked = await tokenById(tx, row.id, true);
    if (!locked || locked.brokenAt !== null) return { kind: "ok", row: null };
    if (!due(locked, when)) return { kind: "ok", row: locked };
    if (locked.refreshTokenEnc === null) return { kind: "ok", row: null };
    const refreshToken = env.keyring.decrypt(
      locked.refreshTokenEnc,
      tokenContext("refresh_token_enc", locked.id),
    );
    let tokens: TokenSet;
    try {
      tokens = await refreshTokens(
        providerClient(provider, env.keyring),
        env.fetch,
        locked.issuer,
        refreshToken,
      );
    } catch (err) {
      const message =
        err instanceof OAuthCallFailed
          ? `Refreshing the token failed. ${err.message}`
          : "Refreshing the token failed.";
      if (err instanceof OAuthCallFailed && err.oauthError === "invalid_grant") {
        // The grant is gone (revoked or expired at the provider): kept, so people can see why.
        const now = new Date();
        const broken = await updateTokenRow(tx, locked.id, {
          brokenAt: now,
          brokenReason: err.message,
          lastError: err.message,
          lastErrorAt: now,
        });
        await emitTokenEvent(tx, "oauth.token.refresh_failed", broken ?? locked, provider.providerId, {
          reason: err.message,
          broken: true,
        });
        return { kind: "broken", row: broken ?? locked };
      }
      return { kind: "failed", message };
    }
    const updated = await updateTokenRow(tx, locked.id, {
      scopes: grantedScopes(locked.scopes, tokens.scope, providerClient(provider, env.keyring).quirks),
      ...sealed(env.keyring, locked.id, tokens, locked.refreshTokenEnc),
      lastRefreshedAt: new Date(),
    });
    return { kind: "ok", row: updated ?? null };
  });
  if (outcome.kind === "ok") return outcome.row;
  if (outcome.kind === "broken") return null;
  // Recorded outside the refresh's transaction, which failed; the token itself is unchanged.
  await updateTokenRow(exec, row.id, { lastError: outcome.message, lastErrorAt: new Date() });
  throw badGateway(outcome.message);
}
