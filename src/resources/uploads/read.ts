import { Readable } from "node:stream";
import { and, eq, isNotNull } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";
import { uploadChunks, uploads } from "../../db/schema/codehost.ts";
import { notFound } from "../../http/errors.ts";

/**
 * Streams a completed upload's bytes in order, one stored chunk (about 1 MiB) in memory at a time,
 * so any replica can read what another received. 404 when no completed upload has that path.
 */
export async function openUploadedTarball(exec: Executor, path: string): Promise<Readable> {
  const [upload] = await exec
    .select({ id: uploads.id })
    .from(uploads)
    .where(and(eq(uploads.sourceTarballPath, path), isNotNull(uploads.completedAt)));
  if (!upload) throw notFound(`No completed upload at ${path}.`);
  const uploadId = upload.id;
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let seq = 0; ; seq++) {
      const [chunk] = await exec
        .select({ data: uploadChunks.data })
        .from(uploadChunks)
        .where(and(eq(uploadChunks.uploadId, uploadId), eq(uploadChunks.seq, seq)));
      if (!chunk) return;
      yield chunk.data;
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}
