import { badGateway } from "../../core/errors.ts";
import { type Executor, inTransaction } from "../../db/client.ts";
import { OAuthCallFailed } from "../../oauth/client.ts";
import { revocationEndpoint, revokeToken } from "../../oauth/revocation.ts";
import { FetchRefused } from "../../oauth/safe-fetch.ts";
import { providerClient } from "../oauth-providers/service.ts";
import type { ProviderRow } from "../oauth-providers/store.ts";
import type { FlowEnv } from "./env.ts";
import { emitTokenEvent } from "./events.ts";
import { tokenContext } from "./seal.ts";
import { deleteTokenRows, type TokenRow } from "./store.ts";

/**
 * Revokes a token's grant at its provider (RFC 7009): the refresh token first (which ends the
 * grant at most servers), then the access token. False when the provider publishes no revocation
 * endpoint (or one the SSRF rules refuse), so the token can only be forgotten. Throws OAuthCallFailed when the provider cannot
 * be reached or refuses.
 */
export async function revokeAtProvider(
  env: FlowEnv,
  token: TokenRow,
  provider: ProviderRow,
): Promise<boolean> {
  const allowLoopback = env.config.oauth.allowInsecureLoopback;
  const endpoint = await revocationEndpoint(env.fetch, token.issuer, allowLoopback);
  if (endpoint === null) return false;
  const client = providerClient(provider, env.keyring);
  const input = { issuer: token.issuer, endpoint };
  try {
    if (token.refreshTokenEnc !== null) {
      const refresh = env.keyring.decrypt(token.refreshTokenEnc, tokenContext("refresh_token_enc", token.id));
      await revokeToken(client, env.fetch, { ...input, token: refresh, hint: "refresh_token" });
    }
    const access = env.keyring.decrypt(token.accessTokenEnc, tokenContext("access_token_enc", token.id));
    await revokeToken(client, env.fetch, { ...input, token: access, hint: "access_token" });
  } catch (err) {
    // The SSRF rules will refuse this endpoint every time: waiting would keep the token forever.
    if (err instanceof FetchRefused) return false;
    throw err;
  }
  return true;
}

export interface Removal {
  deleted: number;
  /** Deleted without being revoked: their provider has no revocation endpoint. */
  notRevocable: number;
}

/**
 * Revokes each token at its provider, then deletes the ones that were revoked (or cannot be).
 * A token whose provider cannot be reached or refuses is kept — the caller wanted the grant
 * ended, and forgetting it here would leave it alive there — and the request fails with 502
 * saying so; retrying later finishes the job. No row is locked across the network calls: a
 * refresh that races with this writes to a row that is then deleted.
 */
export async function revokeAndDelete(
  exec: Executor,
  env: FlowEnv,
  found: { token: TokenRow; provider: ProviderRow }[],
): Promise<Removal> {
  const done: string[] = [];
  const failures: string[] = [];
  let notRevocable = 0;
  for (const { token, provider } of found) {
    try {
      if (!(await revokeAtProvider(env, token, provider))) notRevocable += 1;
      done.push(token.id);
    } catch (err) {
      if (!(err instanceof OAuthCallFailed)) throw err;
      failures.push(err.message);
    }
  }
  await inTransaction(exec, async (tx) => {
    await deleteTokenRows(tx, done);
    for (const { token, provider } of found) {
      if (done.includes(token.id))
        await emitTokenEvent(tx, "oauth.token.revoked", token, provider.providerId);
    }
  });
  if (failures.length > 0) {
    const kept = failures.length === 1 ? "The token was" : `${failures.length} tokens were`;
    const gone = done.length > 0 ? ` ${done.length} other token(s) were revoked and deleted.` : "";
    throw badGateway(`${kept} not revoked at the provider and kept; try again later. ${failures[0]}${gone}`);
  }
  return { deleted: done.length, notRevocable };
}
