import { moveDeployment } from "../resources/deployments/store.ts";
import { listenerLiveness } from "../resources/listeners/store.ts";
import type { Worker } from "./context.ts";
import { asLeader, checkedDeployments } from "./store.ts";

/**
 * Leader only (one process at a time, by advisory lock): deployments whose data plane cannot
 * report become UNKNOWN, and READY again when it can. A local deployment asks its runtime; a
 * listener's follows the listener: silent for SLIPWAY_LISTENER_TIMEOUT_S is unknown.
 */
export async function checkHealth(w: Worker): Promise<void> {
  await asLeader(w.db, async (tx) => {
    const deployments = await checkedDeployments(tx);
    const connected = deployments.some((d) => d.listener_id)
      ? new Map((await listenerLiveness(tx, w.listenerTimeoutS)).map((l) => [l.id, l.connected]))
      : new Map<string, boolean>();
    for (const d of deployments) {
      if (w.restoring.has(d.id)) continue;
      const health = d.listener_id
        ? connected.get(d.listener_id)
          ? "running"
          : "unknown"
        : w.runtimes.forRevision(d).health(d.id);
      if (health === "unknown" && d.status === "READY") await moveDeployment(tx, d.id, "READY", "UNKNOWN");
      if (health === "running" && d.status === "UNKNOWN") await moveDeployment(tx, d.id, "UNKNOWN", "READY");
    }
  });
}
