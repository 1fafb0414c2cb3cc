import { recordLastRequest } from "../core/deployments/runtime-store.ts";
import { moveDeployment } from "../core/deployments/write-store.ts";
import type { Executor } from "../db/client.ts";
import type { Worker } from "./context.ts";
import { DEFAULT_RUNTIME } from "./runtimes.ts";
import { idleDeployments } from "./store.ts";

/**
 * UNUSED (docs/local-runtime.md, "Unused deployments"): a READY deployment, not `prod`, that served no request for
 * SLIPWAY_UNUSED_AFTER_S becomes UNUSED; the next request, or a new revision, makes it READY.
 * Every process records what its own apps router saw; the leader decides.
 */

/** A line for a revision's deploy log, written once the leader's transaction is over. */
export interface LogNote {
  revisionId: string;
  line: string;
}

/** One line in the deploy log of a revision, whether or not this process has its log open. */
export async function noteInLog(w: Worker, revisionId: string, line: string): Promise<void> {
  const open = w.sinks.get(revisionId);
  if (open !== undefined) {
    open.log("deploy", line);
    await open.flush();
    return;
  }
  // The line names no secret, so the sink needs none to hide; closed again once stored.
  w.sinks.for(revisionId, []).log("deploy", line);
  await w.sinks.close(revisionId);
}

/** Stores the newest request time each served deployment saw here; an UNUSED one becomes READY. */
export async function recordTraffic(w: Worker): Promise<void> {
  for (const [deploymentId, revisionId] of w.served) {
    // Requests reach only this server's apps router: the local runtime's.
    const at = w.runtimes.of(DEFAULT_RUNTIME).lastRequestAt?.(deploymentId);
    if (at === undefined || at <= (w.lastRequests.get(deploymentId) ?? 0)) continue;
    await recordLastRequest(w.db.orm, deploymentId, new Date(at).toISOString());
    w.lastRequests.set(deploymentId, at);
    if (await moveDeployment(w.db.orm, deploymentId, "UNUSED", "READY")) {
      await noteInLog(w, revisionId, "Slipway: a request arrived; the deployment is READY again.");
    }
  }
}

/** Leader only: READY deployments idle for longer than SLIPWAY_UNUSED_AFTER_S become UNUSED. */
export async function markUnused(w: Worker, tx: Executor): Promise<LogNote[]> {
  const afterS = w.config.reconciler.unusedAfterS;
  const notes: LogNote[] = [];
  for (const d of await idleDeployments(tx, afterS)) {
    if (!(await moveDeployment(tx, d.id, "READY", "UNUSED"))) continue;
    w.log.info({ deploymentId: d.id }, "reconciler: deployment is UNUSED");
    notes.push({
      revisionId: d.active_revision_id,
      line: `Slipway: no request for ${afterS} s; the deployment is UNUSED (a request or a new revision makes it READY again).`,
    });
  }
  return notes;
}
