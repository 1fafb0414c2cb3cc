import { LOGS_CHANNEL } from "../db/channels.ts";
import type { Database } from "../db/client.ts";
import { appendLogLines } from "../resources/revision-logs/store.ts";
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
    await appendLogLines(this.db.orm, this.revisionId, batch, this.cap);
    await this.db.notify(LOGS_CHANNEL, this.revisionId);
  }
}

/** This process's open sinks by revision: one per revision, kept while its app may still write. */
export class LogSinks {
  private readonly open = new Map<string, RevisionLogSink>();

  constructor(
    private readonly db: Database,
    private readonly cap: number,
    private readonly onError: (err: unknown, revisionId: string) => void,
  ) {}

  /** The revision's sink (opened now if need be), redacting `secrets` from here on. */
  for(revisionId: string, secrets: Iterable<string>): RevisionLogSink {
    let sink = this.open.get(revisionId);
    if (sink) {
      sink.setSecrets(secrets);
      return sink;
    }
    sink = new RevisionLogSink(this.db, revisionId, secrets, this.cap, (err) =>
      this.onError(err, revisionId),
    );
    this.open.set(revisionId, sink);
    return sink;
  }

  get(revisionId: string): RevisionLogSink | undefined {
    return this.open.get(revisionId);
  }

  /** Flushes and forgets a revision's sink (its app no longer runs here). */
  async close(revisionId: string): Promise<void> {
    await this.open.get(revisionId)?.close();
    this.open.delete(revisionId);
  }

  async closeAll(): Promise<void> {
    await Promise.allSettled([...this.open.values()].map((s) => s.close()));
  }
}
