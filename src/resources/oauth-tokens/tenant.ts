import type { Principal } from "../../core/callers.ts";
import type { TokenFilter } from "./store.ts";

/**
 * Whose tokens a request acts on: the tenant its API key acts for. A token belongs to the tenant
 * it was obtained in, its organization and, for a workspace-bound key, that workspace; never to
 * the key (rotating a key keeps its tokens) nor to the end user (`user_id` is a label that
 * narrows). An organization-level key is its organization's tenant whatever X-Tenant-Id says:
 * the header picks the workspace a request acts in (agents, the Slack routes, where a token was
 * obtained), so switching it never splits a key's tokens.
 */
export interface TokenTenant {
  organizationId: string;
  /** The workspace of a workspace-bound key; null: the organization itself. */
  workspaceId: string | null;
}

/** A request acting on tokens: its tenant, and the workspace it acts in (if one resolves). */
export interface TokenCaller {
  tenant: TokenTenant;
  actingWorkspaceId: string | null;
}

/** The tenant's tokens, narrowed to one end user when `userId` is given. */
export interface TokenScope {
  tenant: TokenTenant;
  userId?: string;
}

export const tenantOfPrincipal = (p: Principal): TokenTenant => ({
  organizationId: p.organizationId,
  workspaceId: p.boundWorkspaceId,
});

/** The caller's tokens and where it acts (route files pass the request's principal). */
export function callerOf(p: Principal): TokenCaller {
  return { tenant: tenantOfPrincipal(p), actingWorkspaceId: p.workspaceId };
}

export function scopeOf(p: Principal, userId?: string): TokenScope {
  const tenant = tenantOfPrincipal(p);
  return userId === undefined ? { tenant } : { tenant, userId };
}

/** The end-user label of a tenant's own tokens: what authenticate uses without `user_id`. */
export const tenantUserId = (t: TokenTenant): string =>
  t.workspaceId === null ? `organization:${t.organizationId}` : `workspace:${t.workspaceId}`;

/** Who did something (linked an agent connection): the calling key. */
export const keyLabel = (p: Principal): string => `apikey:${p.keyId}`;

/**
 * The tokens a scope sees: an organization-level key every token of its organization (its
 * workspaces' too), a workspace-bound key its workspace's only.
 */
export function visibleTokens(s: TokenScope): TokenFilter {
  return {
    organizationId: s.tenant.organizationId,
    ...(s.tenant.workspaceId === null ? {} : { tenantWorkspaceId: s.tenant.workspaceId }),
    ...(s.userId === undefined ? {} : { userId: s.userId }),
  };
}
