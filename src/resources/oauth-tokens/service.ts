import { inAuditedTransaction } from "../../core/audit/scope.ts";
import { notFound } from "../../core/errors.ts";
import { iso } from "../../core/shapes.ts";
import type { Executor } from "../../db/client.ts";
import { getProviderRow } from "../oauth-providers/service.ts";
import type { FlowEnv } from "./env.ts";
import { type Removal, revokeAndDelete } from "./revoke.ts";
import type { OAuthTokenSummary, TokenMetadataBody, TokensQuery } from "./schema.ts";
import {
  makeDefault,
  type TokenFilter,
  type TokenRow,
  tokensWithProviders,
  updateTokenRow,
} from "./store.ts";
import { type TokenScope, type TokenTenant, visibleTokens } from "./tenant.ts";

/** What the Tokens page shows beside the summary: whether the token works and its history. */
function statusOf(row: TokenRow) {
  const lapsed =
    row.expiresAt !== null && row.expiresAt.getTime() <= Date.now() && row.refreshTokenEnc === null;
  return {
    status: row.brokenAt !== null ? ("broken" as const) : lapsed ? ("expired" as const) : ("ok" as const),
    broken_at: iso(row.brokenAt),
    broken_reason: row.brokenReason,
    last_refreshed_at: iso(row.lastRefreshedAt),
    last_error: row.lastError,
    last_error_at: iso(row.lastErrorAt),
  };
}

export function toSummary(row: TokenRow, providerSlug: string, withStatus = false): OAuthTokenSummary {
  return {
    ...(withStatus ? statusOf(row) : {}),
    id: row.id,
    provider_id: providerSlug,
    provider_account_label: row.providerAccountLabel,
    scopes: row.scopes,
    expires_at: iso(row.expiresAt),
    is_default: row.isDefault,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    user_id: row.userId,
    workspace_id: row.tenantWorkspaceId,
    agent_id: row.agentId === "" ? null : row.agentId,
    token_type: row.tokenType,
    has_refresh_token: row.refreshTokenEnc !== null,
  };
}

/** The scope's tokens (never their values), oldest first, across agents unless one is named. */
export async function listTokens(
  exec: Executor,
  scope: TokenScope,
  q: TokensQuery,
): Promise<OAuthTokenSummary[]> {
  const list = await tokensWithProviders(exec, {
    ...visibleTokens(scope),
    providerSlug: q.provider_id ?? q.provider,
    agentId: q.agent_id,
  });
  return list.map((r) => toSummary(r.token, r.provider.providerId, q.include_status === true));
}

/** Whether the scope holds a usable token for the provider (not a broken one; an unknown provider holds none). */
export async function hasToken(exec: Executor, scope: TokenScope, slug: string): Promise<boolean> {
  const usable = { ...visibleTokens(scope), providerSlug: slug, usable: true };
  return (await tokensWithProviders(exec, usable, 1)).length > 0;
}

/** One of the scope's tokens; any other (another tenant's, another user's) is not found. */
export async function visibleToken(exec: Executor, scope: TokenScope, id: string) {
  const [found] = await tokensWithProviders(exec, { ...visibleTokens(scope), id });
  if (!found) throw notFound("OAuth token not found.");
  return found;
}

/** Sets the label and the default flag; null or omitted fields are left as they are. */
export async function patchMetadata(
  exec: Executor,
  scope: TokenScope,
  id: string,
  body: TokenMetadataBody,
): Promise<OAuthTokenSummary> {
  return inAuditedTransaction(exec, async (tx) => {
    const { token, provider } = await visibleToken(tx, scope, id);
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

/** Revokes the scope's token at its provider, then deletes it (with its agent connections). */
export async function deleteToken(
  exec: Executor,
  env: FlowEnv,
  scope: TokenScope,
  id: string,
): Promise<Removal> {
  return revokeAndDelete(exec, env, [await visibleToken(exec, scope, id)]);
}

/** Revokes and deletes all of the scope's tokens for a provider, across agents. */
export async function deleteProviderTokens(
  exec: Executor,
  env: FlowEnv,
  scope: TokenScope,
  slug: string,
): Promise<Removal> {
  const provider = await getProviderRow(exec, scope.tenant.organizationId, slug);
  const found = await tokensWithProviders(exec, { ...visibleTokens(scope), providerRef: provider.id });
  return revokeAndDelete(exec, env, found);
}

/**
 * Tokens of Slack providers (provider_type "slack") obtained in a workspace, whoever obtained
 * them, among those the tenant sees (a workspace-bound key: its workspace's own).
 */
const slackInWorkspace = (tenant: TokenTenant, workspaceId: string): TokenFilter => ({
  ...visibleTokens({ tenant }),
  workspaceId,
  providerType: "slack",
});

export async function hasSlackToken(exec: Executor, tenant: TokenTenant, workspaceId: string) {
  return (
    (await tokensWithProviders(exec, { ...slackInWorkspace(tenant, workspaceId), usable: true }, 1)).length >
    0
  );
}

export async function deleteSlackTokens(
  exec: Executor,
  env: FlowEnv,
  tenant: TokenTenant,
  workspaceId: string,
): Promise<Removal> {
  return revokeAndDelete(exec, env, await tokensWithProviders(exec, slackInWorkspace(tenant, workspaceId)));
}
