import { constants, gunzipSync } from "node:zlib";

/** How much of the compressed stream is inspected: enough for the first tar header, bounded output. */
export const HEAD_BYTES = 4096;

/**
 * Why the start of an upload is not a gzip-compressed tar archive, or undefined when it is: the
 * gzip magic bytes, then a first tar header whose checksum is right (every tar format has one).
 * Only the head is decompressed, so a compression bomb costs nothing here.
 */
export function tarballProblem(head: Buffer): string | undefined {
  if (head.length < 2 || head[0] !== 0x1f || head[1] !== 0x8b) {
    return "The body is not gzip-compressed: upload a .tar.gz archive.";
  }
  let block: Buffer;
  try {
    block = gunzipSync(head, { finishFlush: constants.Z_SYNC_FLUSH }).subarray(0, 512);
  } catch {
    return "The body is not valid gzip data.";
  }
  if (block.length < 512) return "The gzip data does not hold a tar archive.";
  if (block.every((b) => b === 0)) return "The tar archive is empty.";
  const stored = Number.parseInt(
    block
      .subarray(148, 156)
      .toString("latin1")
      .replace(/[\0 ]+/g, " ")
      .trim(),
    8,
  );
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < 512; i++) {
    const byte = i >= 148 && i < 156 ? 0x20 : (block[i] as number);
    unsigned += byte;
    signed += byte > 127 ? byte - 256 : byte;
  }
  if (!Number.isFinite(stored) || (stored !== unsigned && stored !== signed)) {
    return "The gzip data does not hold a tar archive.";
  }
  return undefined;
}
