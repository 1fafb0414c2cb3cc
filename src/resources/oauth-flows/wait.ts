import { FLOW_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import { ChannelWaiters } from "../../db/waiters.ts";
import type { FlowEnv } from "../oauth-tokens/env.ts";
import { issued, usableToken } from "../oauth-tokens/seal.ts";
import { tokensWithProviders } from "../oauth-tokens/store.ts";
import type { TokenTenant } from "../oauth-tokens/tenant.ts";
import type { WaitResult } from "./schema.ts";
import { flowOf } from "./store.ts";

/** Wakes long-polling `wait` calls when their flow finishes (keyed by flow id). */
export class FlowWaiters extends ChannelWaiters {
  constructor(db: Database) {
    super(db, FLOW_CHANNEL);
  }
}

/** The flow's state now, or null while it is still pending and not expired. */
async function settled(
  db: Database,
  env: FlowEnv,
  tenant: TokenTenant,
  authId: string,
): Promise<WaitResult | null> {
  const orm = db.orm;
  const flow = await flowOf(orm, tenant, authId);
  if (!flow) return { status: "not_found", auth_id: authId };
  if (flow.status === "failed") {
    return { status: "failed", auth_id: authId, reason: flow.failureReason ?? "The authorization failed." };
  }
  if (flow.status === "pending") {
    if (flow.expiresAt.getTime() > Date.now()) return null;
    return { status: "failed", auth_id: authId, reason: "The authorization was not completed in time." };
  }
  const [found] = flow.tokenRef === null ? [] : await tokensWithProviders(orm, { id: flow.tokenRef });
  if (!found)
    return { status: "failed", auth_id: authId, reason: "The token from this authorization was revoked." };
  const current = await usableToken(orm, env, found.token, found.provider);
  if (!current) {
    return {
      status: "failed",
      auth_id: authId,
      reason: "The token from this authorization expired; authenticate again.",
    };
  }
  return { status: "completed", auth_id: authId, ...issued(current, env.keyring) };
}

/** Re-check at least this often, in case a notification was missed. */
const RECHECK_MS = 1000;

/**
 * Long-polls a flow: `completed` (with the token), `failed` (with the reason), `not_found` (also
 * another tenant's), or after `timeoutS` seconds `timeout` (`pending` when asked not to wait at all).
 */
export async function waitForFlow(
  db: Database,
  env: FlowEnv,
  waiters: FlowWaiters,
  tenant: TokenTenant,
  authId: string,
  timeoutS: number,
): Promise<WaitResult> {
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    const result = await settled(db, env, tenant, authId);
    if (result) return result;
    const left = deadline - Date.now();
    if (timeoutS === 0) return { status: "pending", auth_id: authId };
    if (left <= 0 || waiters.isClosed) return { status: "timeout", auth_id: authId };
    await waiters.sleep(authId, Math.min(left, RECHECK_MS));
  }
}
