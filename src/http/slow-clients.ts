import type { ServerOptions } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import type { Config } from "../config.ts";

/**
 * Node's own limits on slow clients, as Fastify options: headers must all arrive within
 * `headersMs` and the whole request within `requestMs` (Node answers 408 and closes). Node checks
 * pending connections every `connectionsCheckingInterval`, 30 s by default; a shorter one keeps
 * the headers timeout close to what is configured.
 */
export function serverTimeoutOptions(t: Config["timeouts"]): { requestTimeout: number; http: ServerOptions } {
  return {
    requestTimeout: t.requestMs,
    http: {
      headersTimeout: t.headersMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(t.headersMs / 2))),
    },
  };
}

const CHECK_EVERY_MS = 1000;

/**
 * A minimum body rate: a request whose body, after `bodyGraceMs`, has arrived at fewer than
 * `minBodyBytesPerSecond` on average has its connection closed. A client that sends a large
 * Content-Length and then trickles cannot hold a connection and a parser for minutes. Measured
 * on the socket's byte count, so nothing here reads the body itself.
 */
export function registerMinimumBodyRate(app: FastifyInstance, t: Config["timeouts"]): void {
  if (t.minBodyBytesPerSecond <= 0) return;
  app.addHook("onRequest", (request, _reply, done) => {
    const raw = request.raw;
    const socket = raw.socket as Socket | null;
    const hasBody =
      raw.headers["content-length"] !== undefined || raw.headers["transfer-encoding"] !== undefined;
    // Injected requests have no real socket, and a request without a body has nothing to wait for.
    if (!hasBody || raw.headers["content-length"] === "0" || typeof socket?.bytesRead !== "number") {
      return done();
    }
    const started = Date.now();
    const startBytes = socket.bytesRead;
    const timer = setInterval(() => {
      if (raw.complete || socket.destroyed) {
        clearInterval(timer);
        return;
      }
      const elapsed = Date.now() - started;
      if (elapsed < t.bodyGraceMs) return;
      const rate = ((socket.bytesRead - startBytes) * 1000) / elapsed;
      if (rate >= t.minBodyBytesPerSecond) return;
      clearInterval(timer);
      request.log.warn(
        { bytes: socket.bytesRead - startBytes, elapsed_ms: elapsed },
        `closed a connection whose body arrived slower than ${t.minBodyBytesPerSecond} bytes/s`,
      );
      socket.destroy();
    }, CHECK_EVERY_MS);
    timer.unref();
    raw.once("close", () => clearInterval(timer));
    done();
  });
}
