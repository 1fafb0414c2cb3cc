import { randomUUID } from "node:crypto";
import { type Executor, inTransaction } from "../../db/client.ts";
import { recordAuditInTransaction } from "../audit/scope.ts";
import { enqueueDeliveries } from "./deliveries-store.ts";
import { insertEvent } from "./store.ts";
import type { EventType } from "./types.ts";

export interface EventInput {
  organizationId: string;
  workspaceId: string;
  type: EventType;
  /** The event's own fields (ids, names, statuses): never secrets. */
  data: Record<string, unknown>;
}

/**
 * Records an event in the transaction of the change it reports (or in one of its own when given
 * the database): the stream and every subscribed, enabled webhook of the workspace get it exactly
 * when the change commits, and never when it rolls back. Bodies follow the Standard Webhooks
 * shape `{type, timestamp, data}`; `data.tenant_id` names the workspace.
 *
 * Anyone may call it with the executor of their write: the deployment and revision stores do,
 * and so does the listener status writer (`listener.status_changed`, `data: {listener_id, …}`).
 */
export async function emit(exec: Executor, e: EventInput): Promise<void> {
  await inTransaction(exec, async (tx) => {
    const pk = await insertEvent(tx, {
      id: randomUUID(),
      organizationId: e.organizationId,
      workspaceId: e.workspaceId,
      type: e.type,
      timestamp: new Date().toISOString(),
      data: JSON.stringify({ ...e.data, tenant_id: e.workspaceId }),
    });
    await enqueueDeliveries(tx, pk, e.workspaceId, e.type);
    // The API request behind this change (if any) is audited in the same transaction.
    await recordAuditInTransaction(tx);
  });
}
