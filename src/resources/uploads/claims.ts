import { randomInt } from "node:crypto";
import type { Database } from "../../db/client.ts";

/** Upper 32 bits of every process's key: apart from the small fixed keys of db/channels.ts. */
const KEY_SPACE = 0x5117 * 2 ** 32;

/**
 * Whether the process that started an upload is still alive, told by the database itself: while
 * any of its uploads is in progress, a process holds a session-level advisory lock on a key of its
 * own, and marks the uploads it claims with that key (`claimed_by`). A process killed mid-PUT loses
 * its session, so its lock, at once; PGlite's locks die with the process that opened it. The next
 * PUT to the URL then finds the claim's lock free and takes the upload over (store.ts `markStarted`).
 * One pool connection is held while this process receives uploads, none otherwise.
 */
export class UploadClaims {
  /** This process's key, random so that every process (and every restart) has its own. */
  readonly key = KEY_SPACE + randomInt(2 ** 32);
  private holders = 0;
  private held: Promise<void> | undefined;
  private release: (() => void) | undefined;
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly db: Database) {}

  /** Runs fn while this process's lock is held. */
  async during<T>(fn: () => Promise<T>): Promise<T> {
    this.holders++;
    try {
      await this.acquire();
      return await fn();
    } finally {
      this.holders--;
      if (this.holders === 0) this.release?.();
    }
  }

  private acquire(): Promise<void> {
    if (this.held) return this.held;
    // A lock being let go is let go first: the next one is then taken on a clean slate.
    const previous = this.done;
    let locked: () => void = () => {};
    this.held = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const held = this.held;
    this.done = previous.then(() =>
      this.db
        .withAdvisoryLock(this.key, async () => {
          await new Promise<void>((letGo) => {
            this.release = () => {
              this.release = undefined;
              this.held = undefined;
              letGo();
            };
            locked();
          });
        })
        .catch(() => {
          // The lock could not be taken (the database is gone): the PUT's own statements will say so.
          this.held = undefined;
          locked();
        }),
    );
    return held;
  }
}
