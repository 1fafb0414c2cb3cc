import type { LogStream } from "../core/revision-logs/store.ts";
import { appendLogLines } from "../core/revision-logs/store.ts";
import { LOGS_CHANNEL } from "../db/channels.ts";
import type { Database } from "../db/client.ts";
import { cutLine, MAX_LINE_BYTES } from "../runtimes/shared/lines.ts";
import { redactor } from "./redact.ts";

/** Lines kept per revision and stream; older ones are dropped first. */
export const DEFAULT_LOG_CAP = 5000;
/**
 * Longest stored line, in bytes; a longer one is cut (a minified bundle printed by a build, say). The
 * runtimes cut at 64 KiB already (lines.ts): the room past it keeps their marker and what redaction adds.
 */
const MAX_LINE = MAX_LINE_BYTES + 1024;
const FLUSH_MS = 100;
const FLUSH_LINES = 200;
/** Most lines in one INSERT: a statement stays short, so the API's queries are not held behind it. */
const MAX_BATCH = 1000;
const WINDOW_MS = 1000;

interface Pending {
  stream: LogStream;
  at: string;
  line: string;
}

/** The line that stands for `n` lines over the rate (SLIPWAY_LOG_LINES_PER_S). */
export function droppedLine(n: number): string {
  return `slipway: ${n} line${n === 1 ? "" : "s"} dropped (over SLIPWAY_LOG_LINES_PER_S)`;
}

/**
 * Lines a deployment may store per second (SLIPWAY_LOG_LINES_PER_S), shared by the sinks of its
 * revisions (a switch runs two at once). Fixed one-second windows: cheap enough to ask per line.
 */
export class LineBudget {
  private windowStart = Number.NEGATIVE_INFINITY;
  private used = 0;

  constructor(readonly perSecond: number) {}

  /** Whether one more line fits in the current second. */
  take(now: number): boolean {
    if (now - this.windowStart >= WINDOW_MS) {
      this.windowStart = now;
      this.used = 0;
    }
    if (this.used >= this.perSecond) return false;
    this.used++;
    return true;
  }

  /** When the current second ends (epoch ms). */
  windowEnd(): number {
    return this.windowStart + WINDOW_MS;
  }
}

/**
 * Collects a revision's output and stores it in batches, redacted. It outlives the phase that
 * created it: a running app keeps writing deploy lines (crashes, restarts) after `activate`.
 * What the app and its build print (`ingest`) is held to the deployment's budget; lines over it are
 * counted and stored as one "N lines dropped" line per second. Slipway's own lines (`log`) always go in.
 */
export class RevisionLogSink {
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private writeQueued = false;
  private closed = false;
  private redact: (line: string) => string;
  private readonly dropped = new Map<LogStream, number>();
  private droppedTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    readonly revisionId: string,
    secrets: Iterable<string>,
    private readonly cap = DEFAULT_LOG_CAP,
    private readonly onError: (err: unknown) => void = () => {},
    private readonly budget?: LineBudget,
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

  /** A line of Slipway's own: never dropped. */
  log(stream: LogStream, line: string): void {
    if (this.closed) return;
    this.push(stream, line);
  }

  /** A line the revision's processes printed: stored while the deployment's budget lasts, else counted. */
  ingest(stream: LogStream, line: string): void {
    if (this.closed) return;
    const budget = this.budget;
    if (budget === undefined || budget.take(Date.now())) {
      this.push(stream, line);
      return;
    }
    // Counted before any work on the line: a flood costs a map update per line, nothing more.
    this.dropped.set(stream, (this.dropped.get(stream) ?? 0) + 1);
    if (this.droppedTimer === undefined) {
      const wait = Math.max(0, budget.windowEnd() - Date.now());
      this.droppedTimer = setTimeout(() => this.reportDropped(), wait);
      this.droppedTimer.unref?.();
    }
  }

  private reportDropped(): void {
    if (this.droppedTimer) clearTimeout(this.droppedTimer);
    this.droppedTimer = undefined;
    for (const [stream, n] of this.dropped) this.push(stream, droppedLine(n));
    this.dropped.clear();
  }

  private push(stream: LogStream, line: string): void {
    const clean = cutLine(this.redact(line.replace(/\r?\n$/, "")), MAX_LINE);
    this.pending.push({ stream, at: new Date().toISOString(), line: clean });
    if (this.pending.length >= FLUSH_LINES) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /**
   * Stores what is pending; resolves once every line logged before the call is in the database.
   * One write at a time: lines that come meanwhile go together into the next one.
   */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0 || this.writeQueued) return this.writing;
    this.writeQueued = true;
    this.writing = this.writing
      .then(async () => {
        this.writeQueued = false;
        while (this.pending.length > 0) {
          const batch = this.pending.splice(0, MAX_BATCH);
          await this.write(batch);
        }
      })
      .catch((err) => {
        this.writeQueued = false;
        this.onError(err);
      });
    return this.writing;
  }

  async close(): Promise<void> {
    if (this.droppedTimer !== undefined) this.reportDropped();
    await this.flush();
    this.closed = true;
  }

  private async write(batch: Pending[]): Promise<void> {
    await appendLogLines(this.db.orm, this.revisionId, batch, this.cap);
    await this.db.notify(LOGS_CHANNEL, this.revisionId);
  }
}

export interface LogSinkOptions {
  /** Lines kept per revision and stream. */
  cap: number;
  /** Lines of its processes a deployment may store per second (SLIPWAY_LOG_LINES_PER_S). */
  linesPerS: number;
}

/** This process's open sinks by revision: one per revision, kept while its app may still write. */
export class LogSinks {
  private readonly open = new Map<string, { sink: RevisionLogSink; deploymentId: string }>();
  private readonly budgets = new Map<string, LineBudget>();

  constructor(
    private readonly db: Database,
    private readonly opts: LogSinkOptions,
    private readonly onError: (err: unknown, revisionId: string) => void,
  ) {}

  /**
   * The revision's sink (opened now if need be), redacting `secrets` from here on. Its processes'
   * lines count against the budget of `deploymentId` (the revision's own when not given).
   */
  for(revisionId: string, secrets: Iterable<string>, deploymentId = revisionId): RevisionLogSink {
    const found = this.open.get(revisionId);
    if (found) {
      found.sink.setSecrets(secrets);
      return found.sink;
    }
    let budget = this.budgets.get(deploymentId);
    if (budget === undefined) {
      budget = new LineBudget(this.opts.linesPerS);
      this.budgets.set(deploymentId, budget);
    }
    const sink = new RevisionLogSink(
      this.db,
      revisionId,
      secrets,
      this.opts.cap,
      (err) => this.onError(err, revisionId),
      budget,
    );
    this.open.set(revisionId, { sink, deploymentId });
    return sink;
  }

  get(revisionId: string): RevisionLogSink | undefined {
    return this.open.get(revisionId)?.sink;
  }

  /** Flushes and forgets a revision's sink (its app no longer runs here). */
  async close(revisionId: string): Promise<void> {
    const found = this.open.get(revisionId);
    if (!found) return;
    await found.sink.close();
    this.open.delete(revisionId);
    const shared = [...this.open.values()].some((o) => o.deploymentId === found.deploymentId);
    if (!shared) this.budgets.delete(found.deploymentId);
  }

  async closeAll(): Promise<void> {
    await Promise.allSettled([...this.open.values()].map((o) => o.sink.close()));
  }
}
