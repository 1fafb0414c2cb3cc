import type { Executor } from "../db/client.ts";
import { setStorageNote } from "../resources/deployments/store.ts";
import type { Worker } from "./context.ts";
import { databaseStorage } from "./store.ts";
import type { LogNote } from "./usage.ts";

/**
 * `db_storage_gi` on one machine: PostgreSQL has no per-database quota, so the leader compares each
 * app database's size (pg_database_size) with it and reports crossing it, either way, with a line
 * in the active revision's deploy log and a server log warning. The note stays on the deployment
 * (`storage_note`) so each crossing is reported once. Nothing is stopped or refused.
 */

/** How often the sizes are read (a directory walk per database on the server). */
const CHECK_EVERY_MS = 60_000;
const GiB = 1024 ** 3;
const lastCheck = new WeakMap<Worker, number>();

const gib = (bytes: number) => `${(bytes / GiB).toFixed(3)} GiB`;

export async function checkStorage(w: Worker, tx: Executor): Promise<LogNote[]> {
  if (w.appDbs === undefined) return [];
  const now = Date.now();
  if (now - (lastCheck.get(w) ?? 0) < CHECK_EVERY_MS) return [];
  lastCheck.set(w, now);
  const rows = await databaseStorage(tx);
  const sizes = await w.appDbs.sizes(rows.map((r) => r.database_name));
  const notes: LogNote[] = [];
  for (const r of rows) {
    const size = sizes.get(r.database_name);
    const limitGi = typeof r.storage_gi === "number" && r.storage_gi >= 0 ? r.storage_gi : undefined;
    if (size === undefined) continue;
    const over = limitGi !== undefined && size > limitGi * GiB;
    const note = over ? `its database uses ${gib(size)}, over its db_storage_gi of ${limitGi} GiB` : null;
    if (!(await setStorageNote(tx, r.id, note))) continue;
    if (note !== null) w.log.warn({ deploymentId: r.id, bytes: size }, "reconciler: database over db_storage_gi");
    notes.push({
      revisionId: r.active_revision_id,
      line:
        note === null
          ? `Slipway: the database is within its db_storage_gi again (${gib(size)}).`
          : `Slipway: warning: ${note}; nothing is refused locally, free space or raise db_storage_gi.`,
    });
  }
  return notes;
}
