import type { FastifyInstance } from "fastify";
import { HttpError } from "./errors.ts";

const WINDOW_MS = 60_000;

interface Window {
  start: number;
  count: number;
}

/** Counts per key in fixed one-minute windows (per process); old windows are swept when many pile up. */
class FixedWindows {
  private readonly windows = new Map<string, Window>();

  private current(key: string, now: number): Window | undefined {
    const w = this.windows.get(key);
    return w && now - w.start < WINDOW_MS ? w : undefined;
  }

  /** The count so far in this key's current window (0 when it has none). */
  count(key: string, now = Date.now()): number {
    return this.current(key, now)?.count ?? 0;
  }

  /** Adds one and returns the window. */
  hit(key: string, now = Date.now()): Window {
    let w = this.current(key, now);
    if (!w) {
      if (this.windows.size > 10_000) {
        for (const [k, v] of this.windows) if (now - v.start >= WINDOW_MS) this.windows.delete(k);
      }
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    w.count++;
    return w;
  }

  /** Whole seconds until the key's window ends (at least 1). */
  resetSeconds(key: string, now = Date.now()): number {
    const start = this.current(key, now)?.start ?? now;
    return Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000));
  }
}

/**
 * A per-API-key limit on requests a minute: a runaway script gets 429 with Retry-After instead of
 * starving everyone else. Public routes (health, metrics, OAuth callbacks, signed uploads) are
 * not counted; they carry no key.
 */
export function registerRateLimit(app: FastifyInstance, perMinute: number): void {
  if (perMinute <= 0) return;
  const windows = new FixedWindows();
  app.addHook("onRequest", async (request, reply) => {
    const keyId = request.principal?.keyId;
    if (!keyId) return;
    const w = windows.hit(keyId);
    const resetSeconds = windows.resetSeconds(keyId);
    reply.header("x-ratelimit-limit", String(perMinute));
    reply.header("x-ratelimit-remaining", String(Math.max(0, perMinute - w.count)));
    reply.header("x-ratelimit-reset", String(resetSeconds));
    if (w.count > perMinute) {
      throw new HttpError(429, `Rate limit of ${perMinute} requests a minute for this API key exceeded.`, {
        "retry-after": String(resetSeconds),
      });
    }
  });
}

/**
 * A per-client-address limit on failed authentications: once an address has had `perMinute`
 * 401s in a minute, its requests to routes that need a key get 429 with Retry-After until the
 * minute is over, before any key is looked up. Successful requests are not counted. Registered
 * before the auth hook, so a key-guessing client costs no database work once limited.
 */
export function registerAuthFailureLimit(app: FastifyInstance, perMinute: number): void {
  if (perMinute <= 0) return;
  const failures = new FixedWindows();
  app.addHook("onRequest", (request, _reply, done) => {
    if (request.routeOptions.config?.auth?.public || request.routeOptions.url === undefined) return done();
    if (failures.count(request.ip) < perMinute) return done();
    const retry = failures.resetSeconds(request.ip);
    done(
      new HttpError(
        429,
        `Too many failed authentications from this address (limit ${perMinute} a minute); retry after ${retry} s.`,
        { "retry-after": String(retry) },
      ),
    );
  });
  app.addHook("onResponse", (request, reply, done) => {
    if (reply.statusCode === 401) failures.hit(request.ip);
    done();
  });
}
