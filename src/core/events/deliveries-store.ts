import { type SQL, sql } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";

/**
 * The fan-out of an event to its webhook deliveries, written with the event (the same transaction
 * or data-modifying statement): `webhook_deliveries` rows are born here, and the webhooks
 * resource's store (resources/webhooks/store.ts) claims, attempts and requeues them.
 */

/** How long a delivery is retried after its event (or after a redeliver). */
export const GIVE_UP_AFTER = "24 hours";

/** Queues an event for every enabled webhook of the workspace subscribed to its type (in the event's transaction). */
export async function enqueueDeliveries(
  tx: Executor,
  eventPk: number,
  workspaceId: string,
  type: string,
): Promise<void> {
  await tx.execute(
    deliveriesFor(
      sql`(SELECT ${eventPk}::bigint AS pk, ${workspaceId}::uuid AS workspace_id, ${type}::text AS type)`,
    ),
  );
}

/**
 * The deliveries of the events `events` lists (columns pk, workspace_id, type): one per enabled
 * webhook of the event's workspace subscribed to its type. Also a data-modifying CTE's part.
 */
export function deliveriesFor(events: SQL): SQL {
  return sql`INSERT INTO webhook_deliveries (webhook_id, event_pk, give_up_at)
             SELECT w.id, e.pk, now() + ${GIVE_UP_AFTER}::interval
               FROM ${events} e JOIN webhooks w ON w.workspace_id = e.workspace_id
              WHERE w.enabled AND w.events @> jsonb_build_array(e.type)`;
}
