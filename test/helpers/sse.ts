export interface SseEvent {
  id: string;
  event: string;
  data: string;
}

/**
 * A server-sent events client over fetch: `next()` resolves with each event as it arrives
 * (comments and heartbeats skipped); `close()` leaves.
 */
export class SseClient {
  private buffer = "";
  private readonly queue: SseEvent[] = [];
  private waiter: (() => void) | undefined;
  private readonly controller = new AbortController();
  status = 0;

  static async open(url: string, headers: Record<string, string>): Promise<SseClient> {
    const client = new SseClient();
    const res = await fetch(url, {
      headers: { accept: "text/event-stream", ...headers },
      signal: client.controller.signal,
    });
    client.status = res.status;
    if (res.body) void client.pump(res.body);
    return client;
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of body) {
        this.buffer += decoder.decode(chunk, { stream: true });
        let end = this.buffer.indexOf("\n\n");
        while (end >= 0) {
          const block = this.buffer.slice(0, end);
          this.buffer = this.buffer.slice(end + 2);
          const e: SseEvent = { id: "", event: "message", data: "" };
          let any = false;
          for (const line of block.split("\n")) {
            const m = /^(id|event|data): ?(.*)$/.exec(line);
            if (!m) continue;
            any = true;
            const [, field, value] = m as unknown as [string, "id" | "event" | "data", string];
            e[field] = value;
          }
          if (any) this.queue.push(e);
          this.waiter?.();
          end = this.buffer.indexOf("\n\n");
        }
      }
    } catch {
      // Aborted by close().
    }
  }

  /** The next event; rejects after `timeoutMs`. */
  async next(timeoutMs = 60_000): Promise<SseEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = this.queue.shift();
      if (e) return e;
      if (Date.now() > deadline) throw new Error("no server-sent event in time");
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 100);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }

  /** Events until one matches `until` (included). */
  async collect(until: (e: SseEvent) => boolean): Promise<SseEvent[]> {
    const out: SseEvent[] = [];
    for (;;) {
      const e = await this.next();
      out.push(e);
      if (until(e)) return out;
    }
  }

  close(): void {
    this.controller.abort();
  }
}
