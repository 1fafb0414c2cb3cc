import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { Webhook as Signer } from "standardwebhooks";
import type { Keyring } from "../../crypto/envelope.ts";
import { EVENTS_CHANNEL } from "../../db/channels.ts";
import type { Database } from "../../db/client.ts";
import { createSafeFetch, type SafeFetch } from "../../oauth/safe-fetch.ts";
import { secretContext } from "./service.ts";
import { type AttemptResult, type ClaimedDelivery, claimDeliveries, recordAttempt } from "./store.ts";

export interface DispatcherOptions {
  db: Database;
  keyring: Keyring;
  /** SLIPWAY_WEBHOOKS_ALLOW_PRIVATE: receivers on this machine may be reached. */
  allowPrivate: boolean;
  log: { warn(obj: object, msg: string): void };
  /** First retry after this; each next one after twice as long, at most an hour (tests shorten it). */
  retryBaseMs?: number;
  /** How often due retries are looked for when no NOTIFY came. */
  pollMs?: number;
  /** Deliveries in flight at once from this process. */
  concurrency?: number;
}

const MAX_RETRY_MS = 60 * 60 * 1000;
const TIMEOUT_MS = 15_000;
const LEASE_MS = 60_000;

/** How long after the `attempts`-th failure the next attempt goes: base, doubling, at most an hour. */
export function retryDelay(attempts: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempts - 1), MAX_RETRY_MS);
}

/**
 * Sends queued deliveries (webhooks/store.ts) signed per Standard Webhooks: claimed under a lease
 * with SKIP LOCKED, so every process may run one; a failure (no 2xx, a network error, a refused
 * address) is retried with back-off until 24 hours after the event. At least once: a receiver may
 * see a `webhook-id` twice (a crash after it answered), never a different body for it.
 */
export class WebhookDispatcher {
  private readonly workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  private readonly fetch: SafeFetch;
  private readonly baseMs: number;
  private readonly pollMs: number;
  private readonly concurrency: number;
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly opts: DispatcherOptions) {
    this.fetch = createSafeFetch({
      allowLoopback: opts.allowPrivate,
      timeoutMs: TIMEOUT_MS,
      maxBytes: 64 * 1024,
      maxRedirects: 0,
    });
    this.baseMs = opts.retryBaseMs ?? 5000;
    this.pollMs = opts.pollMs ?? 1000;
    this.concurrency = opts.concurrency ?? 32;
  }

  async start(): Promise<void> {
    this.unlisten = await this.opts.db.listen(EVENTS_CHANNEL, () => this.wake());
    this.schedule(0);
  }

  wake(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = (async () => {
      do {
        this.again = false;
        try {
          await this.pass();
        } catch (err) {
          if (!this.stopped) this.opts.log.warn({ err }, "webhook dispatch pass failed");
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.ticking = undefined;
    });
  }

  /** Stops claiming and waits for the deliveries in flight (each ends within its timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.unlisten?.().catch(() => {});
    await this.ticking;
    await Promise.allSettled([...this.inFlight]);
  }

  private schedule(delay = this.pollMs): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.wake();
      this.schedule();
    }, delay);
    this.timer.unref?.();
  }

  private async pass(): Promise<void> {
    const free = this.concurrency - this.inFlight.size;
    const claimed = await claimDeliveries(this.opts.db.orm, this.workerId, LEASE_MS, free);
    for (const d of claimed) {
      const job: Promise<void> = this.deliver(d)
        .catch((err) => this.opts.log.warn({ err, deliveryId: d.id }, "recording a webhook attempt failed"))
        .finally(() => {
          this.inFlight.delete(job);
          // The webhook's next delivery may be waiting for this one.
          this.wake();
        });
      this.inFlight.add(job);
    }
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    const at = new Date();
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      const secret = this.opts.keyring.decrypt(d.secret_enc, secretContext(d.webhook_id));
      const signature = new Signer(secret).sign(d.event_id, at, d.body);
      const res = await this.fetch(d.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "Slipway-Webhooks/1",
          "webhook-id": d.event_id,
          "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
          "webhook-signature": signature,
        },
        body: d.body,
        discardBody: true,
      });
      statusCode = res.status;
      if (res.status < 200 || res.status >= 300) error = `the receiver answered ${res.status}`;
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const durationMs = Math.round(performance.now() - started);
    const retryInMs = retryDelay(d.attempts + 1, this.baseMs);
    const outcome: AttemptResult["outcome"] =
      error === null
        ? { status: "delivered" }
        : Date.now() + retryInMs > Date.parse(d.give_up_at)
          ? { status: "failed" }
          : { status: "pending", retryInMs };
    await recordAttempt(this.opts.db.orm, d.id, this.workerId, {
      at: at.toISOString(),
      statusCode,
      error,
      durationMs,
      outcome,
    });
  }
}
