import { and, eq, isNotNull, isNull, lt, or, sql } from "drizzle-orm";
import { type Executor, rows } from "../../db/client.ts";
import { uploadChunks, uploads } from "../../db/schema/codehost.ts";

/** The only module that writes SQL on `uploads` and `upload_chunks`. */

/** Drops the deployment's URLs that expired unused (and the chunks of a PUT they may hold). */
export async function deleteExpiredUploads(exec: Executor, deploymentId: string): Promise<void> {
  await exec
    .delete(uploads)
    .where(
      and(
        eq(uploads.deploymentId, deploymentId),
        isNull(uploads.completedAt),
        lt(uploads.expiresAt, sql`now()`),
      ),
    );
}

export interface NewUpload {
  id: string;
  deploymentId: string;
  path: string;
  tokenHash: string;
  /** A Postgres interval, e.g. "15 minutes": the database's clock sets the expiry. */
  ttl: string;
}

/** Inserts the upload row and returns when its URL expires. */
export async function insertUpload(exec: Executor, u: NewUpload): Promise<Date> {
  const [row] = await exec
    .insert(uploads)
    .values({
      id: u.id,
      deploymentId: u.deploymentId,
      sourceTarballPath: u.path,
      tokenHash: u.tokenHash,
      expiresAt: sql`now() + ${u.ttl}::interval`,
    })
    .returning({ expiresAt: uploads.expiresAt });
  if (!row) throw new Error("storing the upload returned no row");
  return row.expiresAt;
}

/** What a PUT checks before it claims the upload. */
export async function uploadForClaim(exec: Executor, uploadId: string) {
  const [row] = await exec
    .select({
      tokenHash: uploads.tokenHash,
      startedAt: uploads.startedAt,
      completedAt: uploads.completedAt,
      expired: sql<boolean>`${uploads.expiresAt} <= now()`,
    })
    .from(uploads)
    .where(eq(uploads.id, uploadId));
  return row;
}

/**
 * Marks the upload started by the process holding advisory lock `key` (claims.ts), unless it is
 * finished, has expired, or another live process is receiving it: false then. A start whose
 * process's lock is free (it crashed mid-PUT) is taken over, and the chunks it left are dropped.
 */
export async function markStarted(exec: Executor, uploadId: string, key: number): Promise<boolean> {
  const claimed = await exec
    .update(uploads)
    .set({ startedAt: sql`now()`, claimedBy: key })
    .where(
      and(
        eq(uploads.id, uploadId),
        isNull(uploads.completedAt),
        sql`${uploads.expiresAt} > now()`,
        or(
          isNull(uploads.startedAt),
          sql`(${uploads.claimedBy} IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM pg_locks
                 WHERE locktype = 'advisory' AND objsubid = 1 AND granted
                   AND ((classid::bigint << 32) | objid::bigint) = ${uploads.claimedBy}))`,
        ),
      ),
    )
    .returning({ id: uploads.id });
  if (claimed.length === 0) return false;
  await exec.delete(uploadChunks).where(eq(uploadChunks.uploadId, uploadId));
  return true;
}

/** Forgets a failed PUT's chunks and frees the URL for another try. */
export async function resetUpload(exec: Executor, uploadId: string): Promise<void> {
  await exec.delete(uploadChunks).where(eq(uploadChunks.uploadId, uploadId));
  await exec.update(uploads).set({ startedAt: null, claimedBy: null }).where(eq(uploads.id, uploadId));
}

export async function insertChunk(
  exec: Executor,
  uploadId: string,
  seq: number,
  data: Buffer,
): Promise<void> {
  // base64 text decoded by the server: both drivers pass it far faster than a bytea parameter.
  await exec.execute(
    sql`INSERT INTO upload_chunks (upload_id, seq, data) VALUES (${uploadId}, ${seq}, decode(${data.toString("base64")}, 'base64'))`,
  );
}

/** Marks the upload complete; undefined when its row is gone (the deployment was deleted). */
export async function completeUpload(exec: Executor, uploadId: string, sizeBytes: number) {
  const [done] = await exec
    .update(uploads)
    .set({ completedAt: sql`now()`, sizeBytes })
    .where(eq(uploads.id, uploadId))
    .returning();
  return done;
}

/** The id of the completed upload at this path (of this deployment, when one is given). */
export async function completedUploadId(
  exec: Executor,
  path: string,
  deploymentId?: string,
): Promise<string | undefined> {
  const [row] = await exec
    .select({ id: uploads.id })
    .from(uploads)
    .where(
      and(
        eq(uploads.sourceTarballPath, path),
        deploymentId === undefined ? undefined : eq(uploads.deploymentId, deploymentId),
        isNotNull(uploads.completedAt),
      ),
    );
  return row?.id;
}

/** One stored chunk's bytes, or undefined past the last one. */
export async function chunkAt(exec: Executor, uploadId: string, seq: number): Promise<Buffer | undefined> {
  // As base64 text: both drivers move it far faster than bytea.
  const [chunk] = await rows<{ data: string }>(
    exec,
    sql`SELECT encode(data, 'base64') AS data FROM upload_chunks WHERE upload_id = ${uploadId} AND seq = ${seq}`,
  );
  return chunk && Buffer.from(chunk.data, "base64");
}
