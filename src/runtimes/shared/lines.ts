import type { Readable } from "node:stream";

/**
 * Longest line passed on, in bytes: a line past it is cut (`… [cut: N bytes]` at its end) and the
 * rest of it read and dropped, so a process printing megabytes without a newline neither exhausts
 * memory nor floods the log with pieces.
 */
export const MAX_LINE_BYTES = 64 * 1024;

/** What ends a cut line: how much of it was dropped. */
export function cutMarker(bytes: number): string {
  return ` … [cut: ${bytes} bytes]`;
}

/** How many of `buf`'s first bytes end on a UTF-8 character boundary (a cut never splits a character). */
function whole(buf: Buffer): number {
  let end = buf.length;
  let back = 0;
  while (back < 3 && end - back - 1 >= 0 && ((buf[end - back - 1] ?? 0) & 0xc0) === 0x80) back++;
  const lead = buf[end - back - 1];
  if (lead === undefined || lead < 0xc0) return end;
  const size = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
  if (back + 1 < size) end -= back + 1;
  return end;
}

/** `line` itself, or its first `max` bytes (whole characters) and the cut marker. */
export function cutLine(line: string, max = MAX_LINE_BYTES): string {
  if (line.length <= max / 4 || Buffer.byteLength(line) <= max) return line;
  const buf = Buffer.from(line);
  const kept = whole(buf.subarray(0, max));
  return `${buf.toString("utf8", 0, kept)}${cutMarker(buf.length - kept)}`;
}

/** Calls `onLine` for every line of `stream` (CR/LF stripped, long lines cut, last partial line flushed). */
export function forEachLine(stream: Readable, onLine: (line: string) => void): void {
  // The current line's bytes, at most MAX_LINE_BYTES of them, and how many more were dropped.
  let parts: Buffer[] = [];
  let kept = 0;
  let dropped = 0;
  const add = (piece: Buffer) => {
    const room = MAX_LINE_BYTES - kept;
    if (piece.length <= room) {
      if (piece.length > 0) parts.push(piece);
      kept += piece.length;
    } else {
      if (room > 0) parts.push(piece.subarray(0, room));
      kept += Math.max(room, 0);
      dropped += piece.length - Math.max(room, 0);
    }
  };
  const emit = () => {
    let buf = Buffer.concat(parts, kept);
    let cut = dropped;
    if (cut > 0) {
      const end = whole(buf);
      cut += buf.length - end;
      buf = buf.subarray(0, end);
    }
    // Progress bars redraw with \r; keep only what was last drawn.
    const text = buf.toString("utf8").replace(/\r$/, "").split("\r").pop() ?? "";
    onLine(cut > 0 ? `${text}${cutMarker(cut)}` : text);
    parts = [];
    kept = 0;
    dropped = 0;
  };
  stream.on("data", (chunk: Buffer) => {
    let from = 0;
    let nl = chunk.indexOf(0x0a, from);
    while (nl !== -1) {
      add(chunk.subarray(from, nl));
      emit();
      from = nl + 1;
      nl = chunk.indexOf(0x0a, from);
    }
    add(chunk.subarray(from));
  });
  stream.on("end", () => {
    if (kept > 0 || dropped > 0) emit();
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
