import { createHash, randomUUID } from "node:crypto";
import { lt } from "drizzle-orm";
import { encryptionContext } from "../../crypto/registry.ts";
import type { Executor } from "../../db/client.ts";
import { oauthFlows } from "../../db/schema/oauth.ts";
import { invalid } from "../../http/errors.ts";
import { authorizationUrl, newCodeVerifier, newState } from "../../oauth/client.ts";
import { findProviderRow, type ProviderRow } from "../oauth-providers/service.ts";
import { callbackUrl, FLOW_TTL_MS, type FlowEnv, providerClient } from "./env.ts";
import type { AuthenticateBody, AuthenticateResult } from "./schema.ts";
import { findToken, issued, type Subject, usableToken } from "./token-store.ts";

export const hashState = (state: string) => createHash("sha256").update(state, "utf8").digest("hex");
export const verifierContext = (flowId: string) =>
  encryptionContext("oauth_flows", "code_verifier_enc", flowId);

/** Finished flows are kept a day for `wait`, then removed when new flows start. */
const KEEP_FINISHED_MS = 24 * 60 * 60 * 1000;

/** Records a new authorization flow and returns the URL the user opens. */
async function startFlow(
  exec: Executor,
  env: FlowEnv,
  provider: ProviderRow,
  subject: Subject,
  scopes: string[],
): Promise<AuthenticateResult> {
  await exec.delete(oauthFlows).where(lt(oauthFlows.expiresAt, new Date(Date.now() - KEEP_FINISHED_MS)));
  const id = randomUUID();
  const state = newState();
  const verifier = provider.usesPkce ? newCodeVerifier() : null;
  const redirectUri = callbackUrl(env.config, provider.providerId);
  await exec.insert(oauthFlows).values({
    id,
    ...subject,
    scopes,
    stateHash: hashState(state),
    codeVerifierEnc: verifier === null ? null : env.keyring.encrypt(verifier, verifierContext(id)),
    redirectUri,
    expiresAt: new Date(Date.now() + FLOW_TTL_MS),
  });
  const url = await authorizationUrl(providerClient(provider, env.keyring), {
    redirectUri,
    state,
    scopes,
    codeVerifier: verifier,
  });
  return { status: "pending", url, auth_id: id };
}

/**
 * A valid token for (provider, user, agent) covering the scopes, renewed if needed; otherwise a
 * new flow. A new flow asks for the scopes already granted too, so the token that replaces the
 * old one loses nothing.
 */
export async function authenticate(
  exec: Executor,
  env: FlowEnv,
  organizationId: string,
  body: AuthenticateBody,
): Promise<AuthenticateResult> {
  const provider = await findProviderRow(exec, organizationId, body.provider);
  if (!provider)
    throw invalid(["body", "provider"], "No OAuth provider with this provider_id in the organization.");
  const scopes = [...new Set(body.scopes)];
  const subject: Subject = {
    organizationId,
    providerRef: provider.id,
    userId: body.user_id,
    agentId: body.agent_id ?? "",
  };
  const existing = await findToken(exec, subject);
  if (existing) {
    const granted = new Set(existing.scopes);
    if (scopes.every((s) => granted.has(s))) {
      const current = await usableToken(exec, env, existing, provider);
      if (current) return { status: "completed", ...issued(current, env.keyring) };
    }
    return startFlow(exec, env, provider, subject, [...new Set([...existing.scopes, ...scopes])]);
  }
  return startFlow(exec, env, provider, subject, scopes);
}
