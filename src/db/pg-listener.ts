import pg from "pg";

/** The `application_name` of the listening connection. */
export const LISTENER_NAME = "slipway-listen";

/** How long a dead listening connection waits before the next try, doubling up to the cap. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;
/** A silent loss (a half-open socket) is found by this ping; it must answer within the timeout. */
const PING_EVERY_MS = 10_000;
const PING_TIMEOUT_MS = 5_000;

/**
 * The one connection of a process that LISTENs on PostgreSQL, for every channel. It reconnects on
 * its own when it is lost (server restart, network) and LISTENs again; `epoch` tells callers
 * whether notifications may have been missed: undefined while not listening, and a new number
 * after every loss. Callers that keep state in step with notifications (the read cache) drop it
 * when the epoch changes; callers that only wake up re-check on a timer anyway.
 */
export class PgListener {
  private client: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private lost = 0;
  private live = false;
  private closed = false;
  private retryMs = RETRY_FIRST_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;

  constructor(private readonly url: string) {}

  /** The listening generation: undefined while disconnected; changes after every loss. */
  get epoch(): number | undefined {
    return this.live ? this.lost : undefined;
  }

  async listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    const fresh = !set;
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
    }
    set.add(handler);
    const client = await this.connect();
    // A connection opened while this channel was added may have missed it; LISTEN twice is harmless.
    if (fresh) await client.query(`LISTEN ${channel}`);
    const own = set;
    return async () => {
      own.delete(handler);
    };
  }

  private connect(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<pg.Client> {
    if (this.closed) throw new Error("database closed");
    // Named, so that an operator (and the tests) can tell it from the pool's connections.
    const client = new pg.Client({
      connectionString: this.url,
      keepAlive: true,
      application_name: LISTENER_NAME,
    });
    client.on("error", () => this.onLost(client));
    client.on("end", () => this.onLost(client));
    client.on("notification", (msg) => {
      for (const h of this.handlers.get(msg.channel) ?? []) h(msg.payload ?? "");
    });
    try {
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`);
      if (this.closed) throw new Error("database closed");
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    this.client = client;
    this.live = true;
    this.retryMs = RETRY_FIRST_MS;
    this.schedulePing(client);
    return client;
  }

  private onLost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.live = false;
    this.lost++;
    clearTimeout(this.pingTimer);
    client.end().catch(() => {});
    if (!this.closed) this.scheduleRetry();
  }

  private scheduleRetry(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.connect().catch(() => {
        this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
        if (!this.closed) this.scheduleRetry();
      });
    }, this.retryMs);
    this.retryTimer.unref();
  }

  private schedulePing(client: pg.Client): void {
    this.pingTimer = setTimeout(() => {
      const timeout = setTimeout(() => this.onLost(client), PING_TIMEOUT_MS);
      client
        .query("SELECT 1")
        .then(
          () => this.client === client && this.schedulePing(client),
          () => this.onLost(client),
        )
        .finally(() => clearTimeout(timeout));
    }, PING_EVERY_MS);
    this.pingTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.live = false;
    clearTimeout(this.retryTimer);
    clearTimeout(this.pingTimer);
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await client?.end().catch(() => {});
  }
}
