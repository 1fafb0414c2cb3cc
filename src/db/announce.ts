/** A notification to send: channel and payload. */
export type Note = readonly [channel: string, payload: string];

/** Sends notes as one statement: `SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[])`. */
export type SendNotes = (channels: string[], payloads: string[]) => Promise<unknown>;

/** The statement a driver sends for a batch, as one prepared statement whatever the batch's size. */
export const NOTIFY_BATCH = "SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS n(c, p)";

/** How long announcements wait for others to share their statement. */
const DEFAULT_WINDOW_MS = 2;

/**
 * Notifications sent after commit, by a statement of their own, for the hot writes that announce
 * their change themselves (a revision-creating PATCH: deployments/store.ts, commitRevision).
 *
 * Why not NOTIFY inside the writing transaction: PostgreSQL serializes the commits of all
 * transactions that notified on a database-wide lock, held through their WAL flush; with PATCHes
 * in flight at once most of them waited on it (half the backends in `Lock:object`) and the two
 * cores stayed partly idle. A transaction that only notifies writes no WAL, so its turn is short.
 *
 * Announcements gather for a couple of milliseconds and go out in one statement, equal ones
 * folded: under load one statement serves many writes (one a PATCH cost a third of the CPU of the
 * PATCH itself). A writer need not wait for it: a notification only wakes listeners sooner than
 * their own polls and expiries would. For the same reason a failure to send is not the writer's
 * failure (its change is committed).
 */
export class Announcer {
  private pending = new Map<string, Note>();
  private waiting: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly send: SendNotes,
    private readonly windowMs = DEFAULT_WINDOW_MS,
  ) {}

  /** Resolves once the notes were sent (or could not be). */
  announce(notes: readonly Note[]): Promise<void> {
    if (notes.length === 0) return Promise.resolve();
    for (const note of notes) this.pending.set(`${note[0]}\n${note[1]}`, note);
    const sent = new Promise<void>((resolve) => this.waiting.push(resolve));
    this.timer ??= setTimeout(() => void this.flush(), this.windowMs);
    return sent;
  }

  /**
   * Runs a transaction (`run` is given its `announce`), then announces what it collected once it
   * has committed; nothing when it throws.
   */
  async afterCommit<T>(run: (announce: (notes: readonly Note[]) => void) => Promise<T>): Promise<T> {
    const notes: Note[] = [];
    const result = await run((more) => notes.push(...more));
    void this.announce(notes);
    return result;
  }

  /** Sends what is pending now and waits for every statement in flight (before the pool closes). */
  async drain(): Promise<void> {
    if (this.pending.size > 0) void this.flush();
    await Promise.all(this.inFlight);
  }

  private flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const notes = [...this.pending.values()];
    const waiting = this.waiting;
    this.pending = new Map();
    this.waiting = [];
    const sending = this.send(
      notes.map((n) => n[0]),
      notes.map((n) => n[1]),
    )
      .then(
        () => undefined,
        () => undefined, // A lost wake-up costs a listener its next poll.
      )
      .finally(() => {
        this.inFlight.delete(sending);
        for (const resolve of waiting) resolve();
      });
    this.inFlight.add(sending);
    return sending;
  }
}
