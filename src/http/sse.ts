import type { ServerResponse } from "node:http";
import type { Database } from "../db/client.ts";

/** Fallback when a NOTIFY is missed (another process's listener reconnecting, say). */
const POLL_MS = 1000;
const HEARTBEAT_MS = 15_000;
/** How long a closing server waits for a stream's peer to take its last bytes. */
const END_GRACE_MS = 1000;

/** What one server-sent event stream reads from, and when it should read again. */
export interface SseSource {
  /** The NOTIFY channel that announces new rows, and whether a payload concerns this stream. */
  channel: string;
  concerns(payload: string): boolean;
  /**
   * The next frames (each a whole `id:`/`event:`/`data:` block ending in a blank line). `full`: a
   * whole batch came, so read again at once; `end`: a last frame, after which the stream closes.
   */
  read(): Promise<{ frames: string[]; full: boolean; end?: string }>;
}

/**
 * Writes an SSE response until the client leaves, the source ends or the server closes
 * (`closing`): the headers, then frames as the source has them, woken by NOTIFY on its channel (or
 * the poll fallback), with a comment line as keep-alive so proxies keep the connection.
 */
export async function streamSse(
  db: Pick<Database, "listen">,
  res: ServerResponse,
  closing: AbortSignal,
  headers: Record<string, string>,
  source: SseSource,
): Promise<void> {
  res.writeHead(200, {
    ...headers,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
  });
  res.write(": following\n\n");

  let closed = false;
  let woken = false;
  let wake: () => void = () => {};
  const onClose = () => {
    closed = true;
    wake();
  };
  res.on("close", onClose);
  closing.addEventListener("abort", onClose);
  if (closing.aborted) onClose();
  // A write racing the client's departure must not become an unhandled error.
  res.on("error", () => {});
  const unlisten = await db.listen(source.channel, (payload) => {
    if (!source.concerns(payload)) return;
    woken = true;
    wake();
  });
  const heartbeat = setInterval(() => {
    if (!closed) res.write(": keep-alive\n\n");
  }, HEARTBEAT_MS);
  try {
    while (!closed) {
      woken = false;
      const { frames, full, end } = await source.read();
      if (closed) break;
      for (const frame of frames) res.write(frame);
      if (end !== undefined) {
        res.write(end);
        break;
      }
      if (full || woken) continue;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, POLL_MS);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  } finally {
    clearInterval(heartbeat);
    res.off("close", onClose);
    closing.removeEventListener("abort", onClose);
    await unlisten();
    if (!res.writableEnded) res.end();
    // The server is closing: the connection must not stay open waiting for a next request, nor on
    // a peer that stopped reading (a proxy whose own client left): it gets a moment, then is cut.
    const socket = res.socket;
    if (closing.aborted && socket) {
      socket.end();
      setTimeout(() => socket.destroy(), END_GRACE_MS).unref();
    }
  }
}
