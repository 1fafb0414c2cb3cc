import { createWriteStream, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import type { Database } from "../db/client.ts";
import { type SnapshotInfo, type SnapshotResult, takeSnapshot } from "./snapshot.ts";

/** The names scheduled backups get: their time sorts them, and only these are ever pruned. */
const SCHEDULED = /^slipway-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z\.backup\.gz$/;

export function scheduledFileName(at = new Date()): string {
  return `slipway-${at.toISOString().replace(/[:.]/g, "-")}.backup.gz`;
}

/**
 * Writes a backup into `dir` as `name` (through `name.partial`, renamed once whole, so the
 * directory never holds half a backup under a backup's name), then removes the oldest scheduled
 * backups beyond `keep`. Files not named as scheduled backups are never touched.
 */
export async function backupToDir(
  db: Database,
  info: SnapshotInfo,
  dir: string,
  name: string,
  keep: number,
): Promise<SnapshotResult> {
  mkdirSync(dir, { recursive: true });
  const partial = join(dir, `${name}.partial`);
  try {
    const out = createWriteStream(partial);
    const result = await takeSnapshot(db, info, out);
    await finished(out);
    renameSync(partial, join(dir, name));
    const kept = readdirSync(dir)
      .filter((f) => SCHEDULED.test(f))
      .sort();
    for (const old of kept.slice(0, Math.max(0, kept.length - keep))) rmSync(join(dir, old), { force: true });
    return result;
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  }
}
