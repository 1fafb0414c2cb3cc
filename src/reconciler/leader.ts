import { pruneAuditLog } from "../core/audit/store.ts";
import { moveDeployment } from "../core/deployments/write-store.ts";
import { pruneEvents } from "../core/events/store.ts";
import type { Worker } from "./context.ts";
import { checkStorage } from "./storage.ts";
import { asLeader, checkedDeployments } from "./store.ts";
import { type LogNote, markUnused, noteInLog } from "./usage.ts";

/**
 * Leader only (one process at a time, by advisory lock): deployments whose data plane cannot
 * report become UNKNOWN, and READY again when it can (a local deployment asks its runtime; a
 * listener's follows the listener: silent for SLIPWAY_LISTENER_TIMEOUT_S is unknown); idle ones
 * become UNUSED (usage.ts); databases over their `db_storage_gi` are reported (storage.ts). Log
 * lines are written after the lock's transaction, which must not wait on other connections
 * (PGlite has one).
 */
export async function checkHealth(w: Worker): Promise<void> {
  const notes: LogNote[] = [];
  await asLeader(w.db, async (tx) => {
    const deployments = await checkedDeployments(tx);
    const connected = deployments.some((d) => d.listener_id)
      ? new Map((await w.lookups.listenerLiveness(tx, w.listenerTimeoutS)).map((l) => [l.id, l.connected]))
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
    notes.push(...(await markUnused(w, tx)));
    notes.push(...(await checkStorage(w, tx)));
  });
  for (const n of notes) await noteInLog(w, n.revisionId, n.line);
}

/** Events (and their webhook deliveries) are kept this many days: long after the 24 hours of retries. */
export const EVENT_RETENTION_DAYS = 30;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
let lastPrune = 0;

/**
 * Leader only, at most hourly per process: audit records older than SLIPWAY_AUDIT_RETENTION_DAYS
 * and events older than EVENT_RETENTION_DAYS go.
 */
export async function pruneHistory(w: Worker, force = false): Promise<void> {
  if (!force && Date.now() - lastPrune < PRUNE_EVERY_MS) return;
  lastPrune = Date.now();
  await asLeader(w.db, async (tx) => {
    await pruneAuditLog(tx, w.config.auditRetentionDays);
    await pruneEvents(tx, EVENT_RETENTION_DAYS);
  });
}
