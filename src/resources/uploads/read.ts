import { Readable } from "node:stream";
import type { Executor } from "../../db/client.ts";
import { UploadNotFound } from "./errors.ts";
import { chunkAt, completedUploadId } from "./store.ts";

/**
 * Streams a completed upload's bytes in order, one stored chunk (about 1 MiB) in memory at a time,
 * so any replica can read what another received. UploadNotFound when no completed upload has that path.
 */
export async function openUploadedTarball(exec: Executor, path: string): Promise<Readable> {
  const found = await completedUploadId(exec, path);
  if (found === undefined) throw new UploadNotFound(`No completed upload at ${path}.`);
  const uploadId = found;
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let seq = 0; ; seq++) {
      const chunk = await chunkAt(exec, uploadId, seq);
      if (!chunk) return;
      yield chunk;
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}
