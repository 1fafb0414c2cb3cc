import type { FastifyInstance } from "fastify";
import { HttpError } from "./errors.ts";

const WINDOW_MS = 60_000;

interface Window {
  start: number;
  count: number;
}

/**
 * A per-API-key limit on requests a minute (fixed windows, per process): a runaway script gets
 * 429 with Retry-After instead of starving everyone else. Public routes (health, metrics, OAuth
 * callbacks, signed uploads) are not counted; they carry no key.
 */
export function registerRateLimit(app: FastifyInstance, perMinute: number): void {
  if (perMinute <= 0) return;
  const windows = new Map<string, Window>();
  app.addHook("onRequest", async (request, reply) => {
    const keyId = request.principal?.keyId;
    if (!keyId) return;
    const now = Date.now();
    let w = windows.get(keyId);
    if (!w || now - w.start >= WINDOW_MS) {
      if (windows.size > 10_000) {
        for (const [k, v] of windows) if (now - v.start >= WINDOW_MS) windows.delete(k);
      }
      w = { start: now, count: 0 };
      windows.set(keyId, w);
    }
    w.count++;
    const resetSeconds = Math.max(1, Math.ceil((w.start + WINDOW_MS - now) / 1000));
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
