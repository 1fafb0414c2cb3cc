import { sql } from "drizzle-orm";
import { isTerminal, type RevisionStatus } from "../../src/core/revisions/states.ts";
import { STATUS_CHANNEL } from "../../src/db/channels.ts";
import { type Database, rows } from "../../src/db/client.ts";

/**
 * Resolves with a revision's status once it is terminal (or one of `until`), woken by the
 * reconciler's status NOTIFY and polling as a fallback. Rejects after `timeoutMs`.
 */
export async function waitForRevision(
  db: Database,
  revisionId: string,
  opts: { until?: readonly RevisionStatus[]; timeoutMs?: number; pollMs?: number } = {},
): Promise<RevisionStatus> {
  const done = (s: RevisionStatus) => (opts.until ? opts.until.includes(s) : isTerminal(s));
  const read = async () => {
    const [row] = await rows<{ status: RevisionStatus }>(
      db.orm,
      sql`SELECT status FROM revisions WHERE id = ${revisionId}`,
    );
    if (!row) throw new Error(`revision ${revisionId} does not exist`);
    return row.status;
  };
  let wake: () => void = () => {};
  const unlisten = await db.listen(STATUS_CHANNEL, (payload) => {
    if (payload === revisionId) wake();
  });
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  try {
    for (;;) {
      const status = await read();
      if (done(status)) return status;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`revision ${revisionId} is still ${status}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, opts.pollMs ?? 250));
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  } finally {
    await unlisten();
  }
}
