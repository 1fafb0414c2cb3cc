import { emit } from "../../core/events/emit.ts";
import type { EventType } from "../../core/events/types.ts";
import { iso } from "../../core/shapes.ts";
import type { Executor } from "../../db/client.ts";
import { workspaceRows } from "../workspaces/store.ts";
import type { TokenRow } from "./store.ts";

export type TokenEventType = Extract<EventType, `oauth.token.${string}`>;

/**
 * Tells webhooks and the event stream about a token: those of the workspace it was obtained in,
 * or, for a token obtained with no workspace, of every workspace of its organization. The data
 * names the token, never its value.
 */
export async function emitTokenEvent(
  exec: Executor,
  type: TokenEventType,
  token: TokenRow,
  providerSlug: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const where = token.workspaceId ?? token.tenantWorkspaceId;
  const workspaceIds =
    where !== null ? [where] : (await workspaceRows(exec, token.organizationId, null)).map((w) => w.id);
  const data = {
    token_id: token.id,
    provider_id: providerSlug,
    user_id: token.userId,
    agent_id: token.agentId === "" ? null : token.agentId,
    scopes: token.scopes,
    expires_at: iso(token.expiresAt),
    ...extra,
  };
  for (const workspaceId of workspaceIds) {
    await emit(exec, { organizationId: token.organizationId, workspaceId, type, data });
  }
}
