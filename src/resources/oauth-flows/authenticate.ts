import { createHash, randomUUID } from "node:crypto";
import { invalid } from "../../core/errors.ts";
import { encryptionContext } from "../../crypto/envelope.ts";
import type { Executor } from "../../db/client.ts";
import { findTemplate } from "../../oauth/catalog.ts";
import { authorizationUrl, newCodeVerifier, newState } from "../../oauth/client.ts";
import { connectionFor } from "../agent-connections/service.ts";
import { findProviderRow, providerClient } from "../oauth-providers/service.ts";
import type { ProviderRow } from "../oauth-providers/store.ts";
import type { FlowEnv } from "../oauth-tokens/env.ts";
import { issued, usableToken } from "../oauth-tokens/seal.ts";
import { pickToken, type Subject, type TokenRow, tokenById } from "../oauth-tokens/store.ts";
import { type TokenCaller, tenantUserId, visibleTokens } from "../oauth-tokens/tenant.ts";
import { callbackUrl, FLOW_TTL_MS } from "./env.ts";
import type { AuthenticateBody, AuthenticateResult } from "./schema.ts";
import { deleteFlowsExpiredBefore, insertFlowRow } from "./store.ts";

/** The scopes a flow asks for when the caller names none: its template's defaults, else none. */
const defaultScopes = (provider: ProviderRow): string[] =>
  provider.template === null ? [] : (findTemplate(provider.template)?.default_scopes ?? []);

export const hashState = (state: string) => createHash("sha256").update(state, "utf8").digest("hex");
export const verifierContext = (flowId: string) =>
  encryptionContext("oauth_flows", "code_verifier_enc", flowId);

/** Finished flows are kept a day for `wait`, then removed when new flows start. */
const KEEP_FINISHED_MS = 24 * 60 * 60 * 1000;

interface FlowPlan {
  subject: Subject;
  scopes: string[];
  /** The token the flow renews, or null for a new one. */
  targetId: string | null;
  makeDefault: boolean;
  /** The workspace the request acts in (recorded on the token as where it was obtained). */
  workspaceId: string | null;
}

/** Records a new authorization flow and returns the URL the user opens. */
async function startFlow(
  exec: Executor,
  env: FlowEnv,
  provider: ProviderRow,
  plan: FlowPlan,
): Promise<AuthenticateResult> {
  await deleteFlowsExpiredBefore(exec, new Date(Date.now() - KEEP_FINISHED_MS));
  const id = randomUUID();
  const state = newState();
  const verifier = provider.usesPkce ? newCodeVerifier() : null;
  const redirectUri = callbackUrl(env.config, provider.providerId);
  await insertFlowRow(exec, {
    id,
    ...plan.subject,
    scopes: plan.scopes,
    stateHash: hashState(state),
    codeVerifierEnc: verifier === null ? null : env.keyring.encrypt(verifier, verifierContext(id)),
    redirectUri,
    expiresAt: new Date(Date.now() + FLOW_TTL_MS),
    targetTokenRef: plan.targetId,
    makeDefault: plan.makeDefault,
    workspaceId: plan.workspaceId,
  });
  const url = await authorizationUrl(providerClient(provider, env.keyring), {
    redirectUri,
    state,
    scopes: plan.scopes,
    codeVerifier: verifier,
  });
  return { status: "pending", url, auth_id: id, user_id: plan.subject.userId };
}

const subjectOf = (row: TokenRow): Subject => ({
  organizationId: row.organizationId,
  tenantWorkspaceId: row.tenantWorkspaceId,
  providerRef: row.providerRef,
  userId: row.userId,
  agentId: row.agentId,
});

const missing = (row: TokenRow, scopes: string[]) => {
  const granted = new Set(row.scopes);
  return scopes.filter((s) => !granted.has(s));
};

/**
 * An agent's connection answers for the agent: its token when usable, otherwise a status that
 * says the connection must be made again (a flow here would renew someone else's token).
 */
async function fromConnection(
  exec: Executor,
  env: FlowEnv,
  provider: ProviderRow,
  found: NonNullable<Awaited<ReturnType<typeof connectionFor>>>,
  scopes: string[],
): Promise<AuthenticateResult> {
  const { connection, token } = found;
  const metadata = { agent_id: connection.agentId, connection_id: connection.id };
  const lacking = missing(token, scopes);
  if (lacking.length > 0) {
    return {
      status: "connection_required",
      user_id: token.userId,
      token_id: token.id,
      metadata: { ...metadata, missing_scopes: lacking },
    };
  }
  const current = await usableToken(exec, env, token, provider);
  if (!current) return { status: "token_expired", user_id: token.userId, token_id: token.id, metadata };
  return { status: "completed", user_id: token.userId, metadata, ...issued(current, env.keyring) };
}

/**
 * A valid token covering the scopes, renewed if needed; otherwise a new flow. Which token: the
 * one named by `token_id` (any the caller's tenant sees, of that user when one is named), else the
 * agent's connection for this provider, else the default of the caller's own tenant for (user,
 * agent): an end user id names someone within one tenant, so two workspaces' "u1" never share a
 * token. A flow that renews a token asks for the scopes it already has too, so the token that
 * replaces the old one loses nothing; `force_new` always starts a flow (a new token unless
 * `token_id` names one).
 */
export async function authenticate(
  exec: Executor,
  env: FlowEnv,
  caller: TokenCaller,
  body: AuthenticateBody,
): Promise<AuthenticateResult> {
  const { tenant } = caller;
  const provider = await findProviderRow(exec, tenant.organizationId, body.provider);
  if (!provider)
    throw invalid(["body", "provider"], "No OAuth provider with this provider_id in the organization.");
  // No scopes asked for: a template's default scopes (Microsoft's offline_access among them).
  const asked = body.scopes.length > 0 ? body.scopes : defaultScopes(provider);
  const scopes = [...new Set(asked)];
  const forceNew = body.force_new ?? false;
  const named = body.user_id ?? body.ls_user_id ?? undefined;
  const subject: Subject = {
    organizationId: tenant.organizationId,
    tenantWorkspaceId: tenant.workspaceId,
    providerRef: provider.id,
    userId: named ?? tenantUserId(tenant),
    agentId: body.agent_id ?? "",
  };
  let target: TokenRow | undefined;
  if (body.token_id != null) {
    const scope = named === undefined ? { tenant } : { tenant, userId: named };
    target = await pickToken(exec, { ...visibleTokens(scope), id: body.token_id, providerRef: provider.id });
    if (!target) {
      throw invalid(
        ["body", "token_id"],
        `No token with this id for this provider${named === undefined ? "" : " and user"} in this tenant.`,
      );
    }
  } else if (!forceNew) {
    if (body.agent_id != null && caller.actingWorkspaceId !== null) {
      const scope = {
        organizationId: tenant.organizationId,
        workspaceId: caller.actingWorkspaceId,
        agentId: body.agent_id,
      };
      const found = await connectionFor(exec, scope, provider.id);
      if (found) return fromConnection(exec, env, provider, found, scopes);
    }
    target = await pickToken(exec, subject);
  }
  const plan = { makeDefault: body.is_default ?? true, workspaceId: caller.actingWorkspaceId };
  if (!target) return startFlow(exec, env, provider, { ...plan, subject, scopes, targetId: null });
  let targetId: string | null = target.id;
  if (!forceNew && missing(target, scopes).length === 0) {
    const current = await usableToken(exec, env, target, provider);
    if (current) return { status: "completed", user_id: current.userId, ...issued(current, env.keyring) };
    // A grant the provider no longer accepts was forgotten: the flow makes a new token.
    if (!(await tokenById(exec, target.id))) targetId = null;
  }
  return startFlow(exec, env, provider, {
    ...plan,
    subject: subjectOf(target),
    scopes: [...new Set([...target.scopes, ...scopes])],
    targetId,
  });
}
