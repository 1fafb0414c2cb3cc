import { connect, type Socket } from "node:net";

/**
 * The front's request log: HAProxy writes one line a request it proxied to an app (config.ts's
 * log-format: slot, status, total ms) into a ring in its own memory, and this process follows
 * the ring over the admin socket (`show events <ring> -w`), many lines a read. A UDP datagram a
 * request cost HAProxy a syscall and this process a wake-up each: a fifth of what the whole
 * request cost (docs/edge.md). HAProxy never waits for the reader; a reader that falls more than
 * the ring behind loses the oldest lines, and one following the same worker again (its session
 * dropped) starts at the ring's end: lines logged meanwhile are not read. A line that is not one
 * of ours is skipped.
 */

export const REQUEST_RING = "requests";

/** How long the reader rests after a read (lines are at most this late in the metrics). */
const BATCH_MS = 100;

export interface LoggedRequest {
  slot: string;
  status: number;
  ms: number;
}

export function parseRequestLine(line: string): LoggedRequest | undefined {
  const m = /^(s\d+) (\d{3}) (\d+)\s*$/.exec(line);
  if (m === null) return undefined;
  return { slot: m[1] as string, status: Number(m[2]), ms: Number(m[3]) };
}

export class RequestLog {
  private conn: Socket | undefined;
  private worker = 0;
  private generation = 0;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly adminSocket: string,
    /** The pid of the worker answering the admin socket (each reload starts another). */
    private readonly workerPid: () => Promise<number>,
    /** Told of each request, in the order HAProxy logged them. */
    private readonly onRequest: (r: LoggedRequest) => void,
  ) {}

  /**
   * Follows the ring of the worker answering the admin socket now (called after each start or
   * reload, and by itself when the reader is dropped). A new worker's ring is read from its
   * beginning, so no request since it started is missed; the same worker's from where it is
   * (its older lines were read already).
   */
  async follow(): Promise<void> {
    const generation = ++this.generation;
    clearTimeout(this.retry);
    const pid = await this.workerPid().catch(() => 0);
    if (this.closed || generation !== this.generation) return;
    if (pid === 0) return this.again(500);
    const fresh = pid !== this.worker;
    this.worker = pid;
    this.conn?.destroy();
    const conn = connect(this.adminSocket);
    this.conn = conn;
    let rest = "";
    conn.setEncoding("latin1");
    let resume: NodeJS.Timeout | undefined;
    conn.on("data", (chunk: string) => {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) {
        const entry = parseRequestLine(line);
        if (entry !== undefined) this.onRequest(entry);
      }
      // Read in batches: HAProxy writes as requests end, and a read (a wake-up) a line or two
      // cost this process as much as the UDP log did. Meanwhile lines wait in the socket and
      // the ring.
      if (resume === undefined) {
        conn.pause();
        resume = setTimeout(() => {
          resume = undefined;
          conn.resume();
        }, BATCH_MS);
      }
    });
    conn.on("error", () => conn.destroy());
    const opened = Date.now();
    conn.on("close", () => {
      clearTimeout(resume);
      // Dropped after a day idle (config.ts): at once; refused: after a while.
      if (this.conn === conn) this.again(Date.now() - opened > 1000 ? 0 : 500);
    });
    conn.write(`show events ${REQUEST_RING} -w${fresh ? "" : " -n"}\n`);
  }

  private again(ms: number): void {
    if (this.closed) return;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.follow(), ms);
    this.retry.unref();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.conn?.destroy();
    this.conn = undefined;
  }
}
