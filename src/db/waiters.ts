import type { Database } from "./client.ts";

/**
 * Sleepers woken by NOTIFY on one channel, by payload: long polls and waits that must answer as
 * soon as another process announces a change. One LISTEN per instance, subscribed on first use; a
 * payload of "*" wakes everyone. Callers re-check on a timer too, for a notification lost while the
 * listening connection reconnected.
 */
export class ChannelWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  private subscribed: Promise<() => Promise<void>> | undefined;
  private closed = false;

  constructor(
    private readonly db: Database,
    private readonly channel: string,
  ) {}

  private subscribe(): Promise<unknown> {
    this.subscribed ??= this.db.listen(this.channel, (payload) => {
      const sets = payload === "*" ? [...this.waiting.values()] : [this.waiting.get(payload) ?? new Set()];
      for (const set of sets) for (const wake of [...set]) wake();
    });
    return this.subscribed;
  }

  /** Resolves when `key` is announced, after `ms`, when `signal` aborts, or when closed. */
  async sleep(key: string, ms: number, signal?: AbortSignal): Promise<void> {
    if (this.closed || signal?.aborted) return;
    await this.subscribe();
    await new Promise<void>((resolve) => {
      let set = this.waiting.get(key);
      if (!set) {
        set = new Set();
        this.waiting.set(key, set);
      }
      const wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", wake);
        set.delete(wake);
        if (set.size === 0) this.waiting.delete(key);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      signal?.addEventListener("abort", wake, { once: true });
      set.add(wake);
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const set of [...this.waiting.values()]) for (const wake of [...set]) wake();
    if (this.subscribed) {
      const unlisten = await this.subscribed.catch(() => undefined);
      await unlisten?.();
    }
  }
}
