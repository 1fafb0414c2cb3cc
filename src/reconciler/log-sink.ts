import { sql } from "drizzle-orm";
import { LOGS_CHANNEL } from "../db/channels.ts";
import type { Database } from "../db/client.ts";
import type { LogStream } from "../runtimes/interface.ts";
import { redactor } from "./redact.ts";

/** NOTIFY channel carrying a revision id whenever new log lines of it are stored. */
/** Lines kept per revision and stream; older ones are dropped first. */
export const DEFAULT_LOG_CAP = 5000;
/** Longest stored line; a longer one is cut (a minified bundle printed by a build, say). */
const MAX_LINE = 8192;
const FLUSH_MS = 100;
const FLUSH_LINES = 200;

interface Pending {
  stream: LogStream;
  at: string;
  line: string;
}

/**
 * Collects a revision's output and stores it in batches, redacted. It outlives the phase that
 * created it: a running app keeps writing deploy lines (crashes, restarts) after `activate`.
 */
export class RevisionLogSink {
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;
  private redact: (line: string) => string;

  constructor(
    private readonly db: Database,
    readonly revisionId: string,
    secrets: Iterable<string>,
    private readonly cap = DEFAULT_LOG_CAP,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.redact = redactor(secrets);
  }

  /** New secret values (the database password once provisioned) are redacted from then on. */
  setSecrets(secrets: Iterable<string>): void {
    this.redact = redactor(secrets);
  }

  /** A line with the secret values hidden (also used for status messages). */
  redactLine(line: string): string {
    return this.redact(line);
  }

  log(stream: LogStream, line: string): void {
    if (this.closed) return;
    const clean = this.redact(line.replace(/\r?\n$/, "")).slice(0, MAX_LINE);
    this.pending.push({ stream, at: new Date().toISOString(), line: clean });
    if (this.pending.length >= FLUSH_LINES) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Stores what is pending; resolves once every line logged before the call is in the database. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length > 0) {
      this.writing = this.writing.then(() => this.write(batch)).catch(this.onError);
    }
    return this.writing;
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  private async write(batch: Pending[]): Promise<void> {
    const rid = this.revisionId;
    await this.db.orm.execute(
      sql`INSERT INTO revision_logs (revision_id, stream, at, line)
          SELECT ${rid}::uuid, t.stream, t.at, t.line
            FROM jsonb_to_recordset(${JSON.stringify(batch)}::jsonb) AS t(stream text, at timestamptz, line text)`,
    );
    for (const stream of new Set(batch.map((b) => b.stream))) {
      await this.db.orm.execute(
        sql`DELETE FROM revision_logs
             WHERE revision_id = ${rid}::uuid AND stream = ${stream}
               AND id <= (SELECT id FROM revision_logs WHERE revision_id = ${rid}::uuid AND stream = ${stream}
                           ORDER BY id DESC OFFSET ${this.cap} LIMIT 1)`,
      );
    }
    await this.db.notify(LOGS_CHANNEL, rid);
  }
}
