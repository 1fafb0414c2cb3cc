import { moveDeployment } from "../resources/deployments/store.ts";
import type { Worker } from "./context.ts";
import { checkStorage } from "./storage.ts";
import { asLeader, checkedDeployments } from "./store.ts";
import { type LogNote, markUnused, noteInLog } from "./usage.ts";

/**
 * Leader only (one process at a time, by advisory lock): deployments whose runtime cannot report
 * become UNKNOWN, and READY again when it can; idle ones become UNUSED (usage.ts); databases over
 * their `db_storage_gi` are reported (storage.ts). Log lines are written after the lock's
 * transaction, which must not wait on other connections (PGlite has one).
 */
export async function checkHealth(w: Worker): Promise<void> {
  const notes: LogNote[] = [];
  await asLeader(w.db, async (tx) => {
    for (const d of await checkedDeployments(tx)) {
      if (w.restoring.has(d.id)) continue;
      const health = w.runtimes.forRevision({ id: d.active_revision_id }).health(d.id);
      if (health === "unknown" && d.status === "READY") await moveDeployment(tx, d.id, "READY", "UNKNOWN");
      if (health === "running" && d.status === "UNKNOWN") await moveDeployment(tx, d.id, "UNKNOWN", "READY");
    }
    notes.push(...(await markUnused(w, tx)));
    notes.push(...(await checkStorage(w, tx)));
  });
  for (const n of notes) await noteInLog(w, n.revisionId, n.line);
}
