import { inAuditedTransaction } from "../../core/audit/scope.ts";
import { FieldsInvalid } from "../../core/errors.ts";
import { recordRemoteState, revisionsOfListener } from "../../core/revisions/listener-store.ts";
import { REPORT_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import type { StatusReport } from "../../protocol/listener.ts";
import { touchListener } from "./store.ts";

/** Longest reason kept of a report (status_message shortens it further). */
const MAX_REASON = 2000;

/**
 * POST /v2/listeners/{id}/status: records each report on its revision and wakes the worker rolling
 * it out, which moves the revision's status (reconciler/remote.ts); an empty list is a heartbeat.
 * A revision the listener does not serve refuses the whole report (422, nothing recorded).
 */
export async function reportStatus(db: Database, listenerId: string, body: StatusReport): Promise<void> {
  const ids = body.revisions.map((r) => r.revision_id.toLowerCase());
  const known = await revisionsOfListener(db.orm, listenerId, ids);
  const items = ids.flatMap((id, i) =>
    known.has(id)
      ? []
      : [
          {
            loc: ["body", "revisions", i, "revision_id"],
            msg: `Revision ${id} is not one of this listener's deployments.`,
            type: "value_error",
          },
        ],
  );
  if (items.length > 0) throw new FieldsInvalid(items);
  await inAuditedTransaction(db.orm, async (tx) => {
    for (const [i, r] of body.revisions.entries()) {
      const reason = r.reason?.trim() ? r.reason.slice(0, MAX_REASON) : null;
      await recordRemoteState(tx, ids[i] ?? r.revision_id, r.state, reason);
    }
    await touchListener(tx, listenerId);
  });
  for (const id of new Set(ids)) await db.notify(REPORT_CHANNEL, id).catch(() => {});
}
