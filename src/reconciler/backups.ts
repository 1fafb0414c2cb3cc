import { randomUUID } from "node:crypto";
import { backupToDir, scheduledFileName } from "../backup/schedule.ts";
import { claimScheduledBackup, finishScheduledBackup } from "../backup/store.ts";
import { slipwayVersion } from "../config/version.ts";
import type { Worker } from "./context.ts";
import { messageOf } from "./errors.ts";
import { asLeader } from "./store.ts";

/** How often a process asks whether a scheduled backup is due (or the period, when shorter). */
const CHECK_EVERY_MS = 60_000;

let lastCheck = 0;
let running: Promise<void> | undefined;

/**
 * Leader only: with SLIPWAY_BACKUP_DIR set, a backup every SLIPWAY_BACKUP_EVERY into that
 * directory, keeping SLIPWAY_BACKUP_KEEP (docs/operations.md#scheduled-backups). The leader lock's
 * transaction only records the backup as started, and only when none was started within the
 * period (so servers sharing a database take one between them); the snapshot is taken after it, in
 * the background, so the reconciler's loop does not wait for it.
 */
export function scheduleBackup(w: Worker): void {
  const { dir, everyMs, keep } = w.config.backups;
  if (dir === undefined || running || w.stopped()) return;
  if (Date.now() - lastCheck < Math.min(everyMs, CHECK_EVERY_MS)) return;
  lastCheck = Date.now();
  running = (async () => {
    const id = randomUUID();
    const name = scheduledFileName();
    let mine = false;
    await asLeader(w.db, async (tx) => {
      mine = await claimScheduledBackup(tx, id, name, everyMs);
    });
    if (!mine) return;
    try {
      const result = await backupToDir(
        w.db,
        { slipwayVersion: slipwayVersion(), masterKeyId: w.keyring.activeKid },
        dir,
        name,
        keep,
      );
      await finishScheduledBackup(w.db.orm, id, { rows: result.rows });
      w.log.info(
        { file: name, rows: result.rows, transactionMs: Math.round(result.transactionMs) },
        "scheduled backup taken",
      );
    } catch (err) {
      w.log.error({ err, file: name }, "scheduled backup failed");
      await finishScheduledBackup(w.db.orm, id, { error: messageOf(err) }).catch(() => {});
    }
  })()
    .catch((err: unknown) => w.log.error({ err }, "scheduled backup: could not check whether one is due"))
    .finally(() => {
      running = undefined;
    });
}
