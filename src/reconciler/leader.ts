import { moveDeployment } from "../resources/deployments/store.ts";
import type { Worker } from "./context.ts";
import { asLeader, checkedDeployments } from "./store.ts";

/**
 * Leader only (one process at a time, by advisory lock): deployments whose runtime cannot report
 * become UNKNOWN, and READY again when it can.
 */
export async function checkHealth(w: Worker): Promise<void> {
  await asLeader(w.db, async (tx) => {
    for (const d of await checkedDeployments(tx)) {
      if (w.restoring.has(d.id)) continue;
      const health = w.runtimes.forRevision({ id: d.active_revision_id }).health(d.id);
      if (health === "unknown" && d.status === "READY") await moveDeployment(tx, d.id, "READY", "UNKNOWN");
      if (health === "running" && d.status === "UNKNOWN") await moveDeployment(tx, d.id, "UNKNOWN", "READY");
    }
  });
}
