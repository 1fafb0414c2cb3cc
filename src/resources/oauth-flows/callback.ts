import type { Refusal } from "../../core/errors.ts";
import { FLOW_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import { exchangeCode, OAuthCallFailed } from "../../oauth/client.ts";
import { grantedScopes } from "../../oauth/quirks.ts";
import { providerClient } from "../oauth-providers/service.ts";
import { type ProviderRow, providerById } from "../oauth-providers/store.ts";
import type { FlowEnv } from "../oauth-tokens/env.ts";
import { emitTokenEvent } from "../oauth-tokens/events.ts";
import { saveTokens } from "../oauth-tokens/seal.ts";
import type { TokenTenant } from "../oauth-tokens/tenant.ts";
import { hashState, verifierContext } from "./authenticate.ts";
import { consumeFlow, type FlowRow, finishFlow } from "./store.ts";

export interface CallbackOutcome {
  /** Why it failed (a domain refusal the HTTP layer turns into a status), or null when it did not. */
  refusal: Refusal | null;
  ok: boolean;
  title: string;
  message: string;
  /** The flow this callback settled, if the state named one. */
  flowId: string | null;
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

const START_AGAIN = "Start again from the application.";

/**
 * The browser's return from the provider: the state is consumed (single use, bound to this
 * provider, not expired), the code is exchanged, and the tokens are stored. Every failure is
 * recorded on the flow, so `wait` reports it, and nothing is stored.
 */
export async function handleCallback(
  db: Database,
  env: FlowEnv,
  slug: string,
  params: URLSearchParams,
  /** When an API key finishes the flow (POST form), only the flows its tenant sees match. */
  tenant: TokenTenant | null = null,
): Promise<CallbackOutcome> {
  const orm = db.orm;
  const state = params.get("state");
  if (state === null || state === "") {
    return {
      refusal: "bad_request",
      ok: false,
      title: "Sign-in failed",
      message: `The request has no state. ${START_AGAIN}`,
      flowId: null,
    };
  }
  const flow = await consumeFlow(orm, hashState(state), tenant);
  if (!flow) {
    return {
      refusal: "bad_request",
      ok: false,
      title: "Sign-in failed",
      message: `This sign-in link is not valid or was already used. ${START_AGAIN}`,
      flowId: null,
    };
  }

  const finish = async (refusal: Refusal, reason: string): Promise<CallbackOutcome> => {
    await finishFlow(orm, flow.id, { status: "failed", failureReason: reason });
    await db.notify(FLOW_CHANNEL, flow.id);
    return {
      refusal,
      ok: false,
      title: "Sign-in failed",
      message: `${reason} ${START_AGAIN}`,
      flowId: flow.id,
    };
  };

  const provider = await providerById(orm, flow.providerRef);
  if (!provider || provider.providerId !== slug) {
    return finish("bad_request", "The sign-in came back for another provider than it was started for.");
  }
  if (flow.expiresAt.getTime() <= Date.now()) {
    return finish("bad_request", "The sign-in took too long and expired.");
  }
  const error = params.get("error");
  if (error !== null) {
    const description = params.get("error_description");
    return finish(
      "bad_request",
      `The provider refused the authorization: ${clip(error, 100)}${description ? ` (${clip(description, 300)})` : ""}.`,
    );
  }
  if (!params.get("code")) return finish("bad_request", "The provider sent no authorization code.");

  return exchange(db, env, flow, provider, params, state, finish);
}

async function exchange(
  db: Database,
  env: FlowEnv,
  flow: FlowRow,
  provider: ProviderRow,
  params: URLSearchParams,
  state: string,
  finish: (refusal: Refusal, reason: string) => Promise<CallbackOutcome>,
): Promise<CallbackOutcome> {
  const verifier =
    flow.codeVerifierEnc === null
      ? null
      : env.keyring.decrypt(flow.codeVerifierEnc, verifierContext(flow.id));
  let result: Awaited<ReturnType<typeof exchangeCode>>;
  try {
    result = await exchangeCode(providerClient(provider, env.keyring), env.fetch, params, {
      state,
      redirectUri: flow.redirectUri,
      codeVerifier: verifier,
    });
  } catch (err) {
    return finish(
      "bad_gateway",
      err instanceof OAuthCallFailed ? err.message : "Exchanging the code for tokens failed.",
    );
  }
  const { tokens, issuer } = result;
  await db.orm.transaction(async (tx) => {
    const row = await saveTokens(
      tx,
      env.keyring,
      {
        organizationId: flow.organizationId,
        tenantWorkspaceId: flow.tenantWorkspaceId,
        providerRef: flow.providerRef,
        userId: flow.userId,
        agentId: flow.agentId,
      },
      tokens,
      grantedScopes(flow.scopes, tokens.scope, providerClient(provider, env.keyring).quirks),
      issuer,
      { targetId: flow.targetTokenRef, makeDefault: flow.makeDefault, workspaceId: flow.workspaceId },
    );
    await finishFlow(tx, flow.id, { status: "completed", tokenRef: row.id });
    if (row.id !== flow.targetTokenRef) {
      await emitTokenEvent(tx, "oauth.token.created", row, provider.providerId);
    }
  });
  await db.notify(FLOW_CHANNEL, flow.id);
  return {
    refusal: null,
    ok: true,
    title: "Authorization complete",
    message: "You can close this window and return to the application.",
    flowId: flow.id,
  };
}
