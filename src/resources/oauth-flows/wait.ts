import { FLOW_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import { tokensWithProviders } from "../oauth-tokens/store.ts";
import type { FlowEnv } from "./env.ts";
import type { WaitResult } from "./schema.ts";
import { flowOf } from "./store.ts";
import { issued, usableToken } from "./tokens.ts";

/**
 * Wakes long-polling `wait` calls when their flow finishes. One LISTEN per app, subscribed on first
 * use; a periodic re-check covers a notification lost while the listening connection reconnected.
 */
export class FlowWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  private subscribed: Promise<() => Promise<void>> | undefined;
  private closed = false;

  constructor(private readonly db: Database) {}

  private subscribe(): Promise<unknown> {
    this.subscribed ??= this.db.listen(FLOW_CHANNEL, (flowId) => {
      for (const wake of this.waiting.get(flowId) ?? []) wake();
    });
    return this.subscribed;
  }

  /** Resolves when the flow is announced, after `ms`, or when the app closes. */
  async sleep(flowId: string, ms: number): Promise<void> {
    if (this.closed) return;
    await this.subscribe();
    await new Promise<void>((resolve) => {
      let set = this.waiting.get(flowId);
      if (!set) {
        set = new Set();
        this.waiting.set(flowId, set);
      }
      const wake = () => {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0) this.waiting.delete(flowId);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      set.add(wake);
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const set of [...this.waiting.values()]) for (const wake of [...set]) wake();
    if (this.subscribed) {
      const unlisten = await this.subscribed.catch(() => undefined);
      await unlisten?.();
    }
  }
}

/** The flow's state now, or null while it is still pending and not expired. */
async function settled(
  db: Database,
  env: FlowEnv,
  organizationId: string,
  authId: string,
): Promise<WaitResult | null> {
  const orm = db.orm;
  const flow = await flowOf(orm, organizationId, authId);
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
 * Long-polls a flow: `completed` (with the token), `failed` (with the reason), `not_found`, or
 * after `timeoutS` seconds `timeout` (`pending` when asked not to wait at all).
 */
export async function waitForFlow(
  db: Database,
  env: FlowEnv,
  waiters: FlowWaiters,
  organizationId: string,
  authId: string,
  timeoutS: number,
): Promise<WaitResult> {
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    const result = await settled(db, env, organizationId, authId);
    if (result) return result;
    const left = deadline - Date.now();
    if (timeoutS === 0) return { status: "pending", auth_id: authId };
    if (left <= 0 || waiters.isClosed) return { status: "timeout", auth_id: authId };
    await waiters.sleep(authId, Math.min(left, RECHECK_MS));
  }
}
