import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";

/** Longest line passed on; a process printing megabytes without a newline must not exhaust memory. */
const MAX_LINE = 8192;

/** Calls `onLine` for every line of `stream` (CR/LF stripped, long lines split, last partial line flushed). */
export function forEachLine(stream: Readable, onLine: (line: string) => void): void {
  const decoder = new StringDecoder("utf8");
  let pending = "";
  const emit = (text: string) => {
    // Progress bars redraw with \r; keep only what was last drawn.
    const line = text.replace(/\r$/, "").split("\r").pop() ?? "";
    for (let i = 0; i < line.length || i === 0; i += MAX_LINE) onLine(line.slice(i, i + MAX_LINE));
  };
  stream.on("data", (chunk: Buffer) => {
    pending += decoder.write(chunk);
    let nl = pending.indexOf("\n");
    while (nl !== -1) {
      emit(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
      nl = pending.indexOf("\n");
    }
    if (pending.length > MAX_LINE) {
      emit(pending.slice(0, MAX_LINE));
      pending = pending.slice(MAX_LINE);
    }
  });
  stream.on("end", () => {
    pending += decoder.end();
    if (pending.length > 0) emit(pending);
    pending = "";
  });
}

/** The last `size` lines seen (what a failed deploy's log ends with). */
export class Tail {
  private readonly kept: string[] = [];

  constructor(private readonly size: number) {}

  push(line: string): void {
    this.kept.push(line);
    if (this.kept.length > this.size) this.kept.shift();
  }

  lines(): string[] {
    return [...this.kept];
  }
}
