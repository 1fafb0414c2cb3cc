import { gzipSync } from "node:zlib";
import { Header } from "tar";

const STEP = 16 * 1024 * 1024;

/**
 * A .tar.gz holding one entry of `size` zero bytes, made without holding or writing them: gzip
 * members (which concatenate into one stream, as `gunzip` reads them) of 16 MiB of zeros each, so
 * 2 GiB takes about 2 MB. `type` other than "File" makes an entry tar skips but still has to read.
 */
export function gzipBomb(
  size: number,
  opts: { path?: string; type?: "File" | "CharacterDevice" } = {},
): Buffer {
  const header = Buffer.alloc(512);
  new Header({
    path: opts.path ?? "zeros.bin",
    mode: 0o644,
    size,
    mtime: new Date(0),
    type: opts.type ?? "File",
  }).encode(header, 0);
  const members: Buffer[] = [gzipSync(header)];
  const full = gzipSync(Buffer.alloc(STEP));
  for (let left = size; left > 0; left -= STEP) {
    members.push(left >= STEP ? full : gzipSync(Buffer.alloc(left)));
  }
  // Padding to a whole block, then the two empty blocks that end an archive.
  members.push(gzipSync(Buffer.alloc(((512 - (size % 512)) % 512) + 1024)));
  return Buffer.concat(members);
}
