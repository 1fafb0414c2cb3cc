import { Readable } from "node:stream";
import { and, eq, isNotNull, sql } from "drizzle-orm";
import { type Executor, rows } from "../../db/client.ts";
import { uploads } from "../../db/schema/codehost.ts";
import { UploadNotFound } from "./errors.ts";

/**
 * Streams a completed upload's bytes in order, one stored chunk (about 1 MiB) in memory at a time,
 * so any replica can read what another received. UploadNotFound when no completed upload has that path.
 */
export async function openUploadedTarball(exec: Executor, path: string): Promise<Readable> {
  const [upload] = await exec
    .select({ id: uploads.id })
    .from(uploads)
    .where(and(eq(uploads.sourceTarballPath, path), isNotNull(uploads.completedAt)));
  if (!upload) throw new UploadNotFound(`No completed upload at ${path}.`);
  const uploadId = upload.id;
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let seq = 0; ; seq++) {
      // As base64 text: both drivers move it far faster than bytea.
      const [chunk] = await rows<{ data: string }>(
        exec,
        sql`SELECT encode(data, 'base64') AS data FROM upload_chunks WHERE upload_id = ${uploadId} AND seq = ${seq}`,
      );
      if (!chunk) return;
      yield Buffer.from(chunk.data, "base64");
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}
