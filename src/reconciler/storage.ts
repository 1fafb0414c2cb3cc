import { setStorageNote } from "../core/deployments/runtime-store.ts";
import { emitStorageExceeded } from "../core/deployments/write-store.ts";
import type { Executor } from "../db/client.ts";
import type { Worker } from "./context.ts";
import { databaseStorage } from "./store.ts";
import type { LogNote } from "./usage.ts";

/**
 * `db_storage_gi` on one machine: PostgreSQL has no per-database quota, so the leader compares each
 * app database's size (pg_database_size) with it and reports crossing it, either way, with a line
 * in the active revision's deploy log; going over is also a server log warning and a
 * `deployment.storage_exceeded` event. The note stays on the deployment (`storage_note`, its text
 * kept current while over) so each crossing is reported once. Nothing is stopped or refused.
 */

/** How often a database's size is read (a directory walk on the server); a new active revision at once. */
const CHECK_EVERY_MS = 60_000;
const GiB = 1024 ** 3;
/** Per worker: `<deployment>:<active revision>` → when its size was last read. */
const lastChecks = new WeakMap<Worker, Map<string, number>>();

const gib = (bytes: number) => `${(bytes / GiB).toFixed(3)} GiB`;

export async function checkStorage(w: Worker, tx: Executor): Promise<LogNote[]> {
  if (w.appDbs === undefined) return [];
  const now = Date.now();
  const checked = lastChecks.get(w) ?? new Map<string, number>();
  lastChecks.set(w, checked);
  const due = (r: { id: string; active_revision_id: string }) =>
    now - (checked.get(`${r.id}:${r.active_revision_id}`) ?? 0) >= CHECK_EVERY_MS;
  const all = await databaseStorage(tx);
  const live = new Set(all.map((r) => `${r.id}:${r.active_revision_id}`));
  for (const key of checked.keys()) if (!live.has(key)) checked.delete(key);
  const rows = all.filter(due);
  if (rows.length === 0) return [];
  for (const r of rows) checked.set(`${r.id}:${r.active_revision_id}`, now);
  const sizes = await w.appDbs.sizes(rows.map((r) => r.database_name));
  const notes: LogNote[] = [];
  for (const r of rows) {
    const size = sizes.get(r.database_name);
    const limitGi = typeof r.storage_gi === "number" && r.storage_gi >= 0 ? r.storage_gi : undefined;
    if (size === undefined) continue;
    const over = limitGi !== undefined && size > limitGi * GiB;
    const note = over ? `its database uses ${gib(size)}, over its db_storage_gi of ${limitGi} GiB` : null;
    if (!(await setStorageNote(tx, r.id, note))) continue;
    // Still over (or still within) with another size: the note is updated, nothing reported again.
    if (over === (r.storage_note !== null)) continue;
    if (over && limitGi !== undefined) {
      w.log.warn({ deploymentId: r.id, bytes: size }, "reconciler: database over db_storage_gi");
      await emitStorageExceeded(tx, r.id, size, limitGi * GiB);
    }
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
