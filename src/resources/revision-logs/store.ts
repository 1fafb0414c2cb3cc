import { sql } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";
import type { LogStream } from "../../runtimes/interface.ts";

/** The only module that writes SQL on `revision_logs` (the reconciler's log sink calls it). */

export interface NewLogLine {
  stream: LogStream;
  at: string;
  line: string;
}

/** Appends a batch of one revision's lines, then drops the oldest beyond `cap` per stream. */
export async function appendLogLines(
  exec: Executor,
  revisionId: string,
  batch: readonly NewLogLine[],
  cap: number,
): Promise<void> {
  await exec.execute(
    sql`INSERT INTO revision_logs (revision_id, stream, at, line)
        SELECT ${revisionId}::uuid, t.stream, t.at, t.line
          FROM jsonb_to_recordset(${JSON.stringify(batch)}::jsonb) AS t(stream text, at timestamptz, line text)`,
  );
  for (const stream of new Set(batch.map((b) => b.stream))) {
    await exec.execute(
      sql`DELETE FROM revision_logs
           WHERE revision_id = ${revisionId}::uuid AND stream = ${stream}
             AND id <= (SELECT id FROM revision_logs WHERE revision_id = ${revisionId}::uuid AND stream = ${stream}
                         ORDER BY id DESC OFFSET ${cap} LIMIT 1)`,
    );
  }
}
