import { sql } from "drizzle-orm";
import { type Executor, rows } from "../db/client.ts";

/** The only module that writes SQL on `scheduled_backups` (migration 0029). */

/**
 * Records a scheduled backup as started, unless one was started within the last `everyMs`: true
 * when this caller is to take it. Run under the leader lock, so two servers never both start one.
 */
export async function claimScheduledBackup(
  exec: Executor,
  id: string,
  file: string,
  everyMs: number,
): Promise<boolean> {
  const claimed = await rows<{ id: string }>(
    exec,
    sql`INSERT INTO scheduled_backups (id, file)
        SELECT ${id}::uuid, ${file}::text
         WHERE NOT EXISTS (SELECT 1 FROM scheduled_backups
                            WHERE started_at > now() - ${everyMs}::bigint * interval '1 millisecond')
        RETURNING id`,
  );
  return claimed.length > 0;
}

/** How a scheduled backup ended: its row count, or the error that stopped it. */
export async function finishScheduledBackup(
  exec: Executor,
  id: string,
  outcome: { rows: number } | { error: string },
): Promise<void> {
  const count = "rows" in outcome ? outcome.rows : null;
  const error = "error" in outcome ? outcome.error.slice(0, 2000) : null;
  await exec.execute(
    sql`UPDATE scheduled_backups SET finished_at = now(), rows = ${count}::bigint, error = ${error}::text
         WHERE id = ${id}::uuid`,
  );
}
