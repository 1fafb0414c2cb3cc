// Server-sent events over fetch (EventSource cannot send the API key header). Browser-safe.
import { type Slipway, SlipwayError } from "./client.ts";

/** One server-sent event: its type (`event`), its `data` and, when the server gave one, its `id`. */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

/** Splits a server-sent-events body into events (`event`, `data`, `id`); comment lines are skipped. */
export async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut = buffer.indexOf("\n\n");
      while (cut >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        cut = buffer.indexOf("\n\n");
        let event = "message";
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "event") event = val;
          else if (field === "data") data.push(val);
          else if (field === "id") id = val;
        }
        if (data.length) yield { event, data: data.join("\n"), id };
      }
    }
  } finally {
    reader.releaseLock();
  }
}

async function errorOf(res: Response): Promise<SlipwayError> {
  const text = await res.text();
  let detail = `The server answered ${res.status}.`;
  try {
    const d = (JSON.parse(text) as { detail?: unknown }).detail;
    if (typeof d === "string") detail = d;
  } catch {
    // Not JSON: keep the status sentence.
  }
  return new SlipwayError(res.status, detail);
}

/** Reconnections refused in a row (about 10 s) before the stream gives up: the server is gone. */
const MAX_REFUSED = 20;

/** Options of {@link openStream}. */
export interface StreamOptions {
  signal?: AbortSignal;
  /** Resume after this event id (sent as `Last-Event-ID`). */
  lastEventId?: string;
}

/**
 * Opens an SSE stream at `path` (relative to the client's base URL) and answers once the server has
 * accepted it (a refusal throws SlipwayError), so a caller can read state knowing that every later
 * event will reach it. The events follow; a connection cut mid-stream, or closed by the server, is
 * reopened after the last id seen, so nothing is missed. It ends when `signal` aborts.
 */
export async function openStream(
  client: Slipway,
  path: string,
  opts: StreamOptions = {},
): Promise<AsyncGenerator<SseEvent>> {
  let lastId = opts.lastEventId;
  const connect = async (): Promise<ReadableStream<Uint8Array>> => {
    const res = await client.fetch(client.baseUrl + path, {
      headers: {
        ...client.headers,
        accept: "text/event-stream",
        ...(lastId ? { "last-event-id": lastId } : {}),
      },
      signal: opts.signal,
    });
    if (!res.ok || !res.body) throw await errorOf(res);
    return res.body;
  };
  const first = await connect();
  return (async function* events() {
    let body: ReadableStream<Uint8Array> | undefined = first;
    let refused = 0;
    for (;;) {
      try {
        if (body === undefined) {
          body = await connect();
          refused = 0;
        }
        for await (const ev of sseEvents(body)) {
          if (ev.id) lastId = ev.id;
          yield ev;
        }
      } catch (err) {
        if (opts.signal?.aborted) return;
        // A connection cut mid-stream (TypeError): reopen. A server gone for good: its error.
        const unreachable = err instanceof SlipwayError && err.status === 0;
        if (!(err instanceof TypeError) && !(unreachable && ++refused < MAX_REFUSED)) throw err;
      }
      body = undefined;
      if (opts.signal?.aborted) return;
      await sleep(500, opts.signal);
      if (opts.signal?.aborted) return;
    }
  })();
}
