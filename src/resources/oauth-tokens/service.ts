import type { Executor } from "../../db/client.ts";
import { notFound } from "../../http/errors.ts";
import { iso } from "../../http/schemas.ts";
import { inAuditedTransaction } from "../audit-log/scope.ts";
import type { FlowEnv } from "../oauth-flows/env.ts";
import { getProviderRow } from "../oauth-providers/service.ts";
import type { TokenOwner } from "./owner.ts";
import { type Removal, revokeAndDelete } from "./revoke.ts";
import type { OAuthTokenSummary, TokenMetadataBody, TokensQuery } from "./schema.ts";
import {
  makeDefault,
  type TokenFilter,
  type TokenRow,
  tokensWithProviders,
  updateTokenRow,
} from "./store.ts";

export function toSummary(row: TokenRow, providerSlug: string): OAuthTokenSummary {
  return {
    id: row.id,
    provider_id: providerSlug,
    provider_account_label: row.providerAccountLabel,
    scopes: row.scopes,
    expires_at: iso(row.expiresAt),
    is_default: row.isDefault,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    user_id: row.userId,
    agent_id: row.agentId === "" ? null : row.agentId,
    token_type: row.tokenType,
    has_refresh_token: row.refreshTokenEnc !== null,
  };
}

/** The owner's tokens: its organization's, of its user. */
const owned = (owner: TokenOwner): TokenFilter => ({
  organizationId: owner.organizationId,
  userId: owner.userId,
});

/** The owner's tokens (never their values), oldest first, across agents unless one is named. */
export async function listTokens(
  exec: Executor,
  owner: TokenOwner,
  q: TokensQuery,
): Promise<OAuthTokenSummary[]> {
  const list = await tokensWithProviders(exec, {
    ...owned(owner),
    providerSlug: q.provider_id ?? q.provider,
    agentId: q.agent_id,
  });
  return list.map((r) => toSummary(r.token, r.provider.providerId));
}

/** Whether the owner holds a token for the provider (an unknown provider holds none). */
export async function hasToken(exec: Executor, owner: TokenOwner, slug: string): Promise<boolean> {
  return (await tokensWithProviders(exec, { ...owned(owner), providerSlug: slug }, 1)).length > 0;
}

/** One of the owner's tokens; anyone else's is not found. */
export async function ownedToken(exec: Executor, owner: TokenOwner, id: string) {
  const [found] = await tokensWithProviders(exec, { ...owned(owner), id });
  if (!found) throw notFound("OAuth token not found.");
  return found;
}

/** Sets the label and the default flag; null or omitted fields are left as they are. */
export async function patchMetadata(
  exec: Executor,
  owner: TokenOwner,
  id: string,
  body: TokenMetadataBody,
): Promise<OAuthTokenSummary> {
  return inAuditedTransaction(exec, async (tx) => {
    const { token, provider } = await ownedToken(tx, owner, id);
    const label = body.provider_account_label;
    if (label == null && body.is_default == null) return toSummary(token, provider.providerId);
    const updated = await updateTokenRow(tx, token.id, {
      ...(label == null ? {} : { providerAccountLabel: label === "" ? null : label }),
      ...(body.is_default === false ? { isDefault: false } : {}),
      updatedAt: new Date(),
    });
    let row = updated ?? token;
    if (body.is_default === true && !row.isDefault) row = await makeDefault(tx, row);
    return toSummary(row, provider.providerId);
  });
}

/** Revokes the owner's token at its provider, then deletes it (with its agent connections). */
export async function deleteToken(
  exec: Executor,
  env: FlowEnv,
  owner: TokenOwner,
  id: string,
): Promise<Removal> {
  return revokeAndDelete(exec, env, [await ownedToken(exec, owner, id)]);
}

/** Revokes and deletes all of the owner's tokens for a provider, across agents. */
export async function deleteProviderTokens(
  exec: Executor,
  env: FlowEnv,
  owner: TokenOwner,
  slug: string,
): Promise<Removal> {
  const provider = await getProviderRow(exec, owner.organizationId, slug);
  const found = await tokensWithProviders(exec, { ...owned(owner), providerRef: provider.id });
  return revokeAndDelete(exec, env, found);
}

/** Tokens of Slack providers (provider_type "slack") obtained in a workspace, whoever owns them. */
const slackInWorkspace = (organizationId: string, workspaceId: string): TokenFilter => ({
  organizationId,
  workspaceId,
  providerType: "slack",
});

export async function hasSlackToken(exec: Executor, organizationId: string, workspaceId: string) {
  return (await tokensWithProviders(exec, slackInWorkspace(organizationId, workspaceId), 1)).length > 0;
}

export async function deleteSlackTokens(
  exec: Executor,
  env: FlowEnv,
  organizationId: string,
  workspaceId: string,
): Promise<Removal> {
  return revokeAndDelete(
    exec,
    env,
    await tokensWithProviders(exec, slackInWorkspace(organizationId, workspaceId)),
  );
}
