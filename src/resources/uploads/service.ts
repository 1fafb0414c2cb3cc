import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { and, eq, isNull, lt, sql } from "drizzle-orm";
import type { Config } from "../../config.ts";
import type { Executor } from "../../db/client.ts";
import { isForeignKeyViolation } from "../../db/errors.ts";
import { uploadChunks, uploads } from "../../db/schema/codehost.ts";
import { deployments } from "../../db/schema/deployments.ts";
import { badRequest, conflict, forbidden, HttpError, invalid, notFound } from "../../http/errors.ts";
import { iso } from "../../http/schemas.ts";
import type { UploadReceipt, UploadUrl } from "./schema.ts";
import { HEAD_BYTES, tarballProblem } from "./tarball.ts";

/** Each stored row holds this much of the tarball: small enough to stream, big enough to be few. */
export const CHUNK_BYTES = 1024 * 1024;
const URL_TTL = "15 minutes";

const hashToken = (token: string) => createHash("sha256").update(token, "utf8").digest();

/** A signed, single-use URL to PUT a source tarball for an `internal_source` deployment of the workspace. */
export async function issueUploadUrl(
  exec: Executor,
  config: Config,
  scope: { workspaceId: string },
  deploymentId: string,
): Promise<UploadUrl> {
  const [deployment] = await exec
    .select({ source: deployments.source, status: deployments.status })
    .from(deployments)
    .where(and(eq(deployments.id, deploymentId), eq(deployments.workspaceId, scope.workspaceId)));
  if (!deployment) throw notFound("Deployment not found.");
  if (deployment.source !== "internal_source") {
    throw badRequest(
      `Uploads are for internal_source deployments; this one's source is ${deployment.source}.`,
    );
  }
  if (deployment.status === "AWAITING_DELETE") throw badRequest("The deployment is being deleted.");
  // URLs that expired unused hold nothing worth keeping (and perhaps the chunks of an aborted PUT).
  await exec
    .delete(uploads)
    .where(
      and(
        eq(uploads.deploymentId, deploymentId),
        isNull(uploads.completedAt),
        lt(uploads.expiresAt, sql`now()`),
      ),
    );
  const id = randomUUID();
  const token = randomBytes(32).toString("base64url");
  const path = `uploads/${deploymentId}/${id}.tar.gz`;
  const [row] = await exec
    .insert(uploads)
    .values({
      id,
      deploymentId,
      sourceTarballPath: path,
      tokenHash: hashToken(token).toString("hex"),
      expiresAt: sql`now() + ${URL_TTL}::interval`,
    })
    .returning({ expiresAt: uploads.expiresAt });
  return {
    upload_url: `${config.publicUrl}${config.basePath}/v2/uploads/${id}?token=${token}`,
    source_tarball_path: path,
    object_path: path,
    expires_at: iso((row as { expiresAt: Date }).expiresAt),
  };
}

const tooLarge = (limit: number) =>
  new HttpError(413, `The tarball is larger than the upload limit of ${limit} bytes.`);

/**
 * Checks the URL's token and claims the upload for this PUT: a claimed or finished upload is not
 * written twice, an expired one not at all.
 */
async function claim(exec: Executor, uploadId: string, token: string | undefined): Promise<void> {
  const [row] = await exec
    .select({
      tokenHash: uploads.tokenHash,
      startedAt: uploads.startedAt,
      completedAt: uploads.completedAt,
      expired: sql<boolean>`${uploads.expiresAt} <= now()`,
    })
    .from(uploads)
    .where(eq(uploads.id, uploadId));
  if (!row) throw notFound("Upload not found.");
  const given = hashToken(token ?? "");
  if (token === undefined || !timingSafeEqual(given, Buffer.from(row.tokenHash, "hex"))) {
    throw forbidden("The upload token is missing or wrong: use the whole upload_url.");
  }
  if (row.completedAt !== null) throw conflict("This upload URL was already used: request a new one.");
  if (row.expired) throw new HttpError(410, "This upload URL has expired: request a new one.");
  const claimed = await exec
    .update(uploads)
    .set({ startedAt: sql`now()` })
    .where(
      and(
        eq(uploads.id, uploadId),
        isNull(uploads.startedAt),
        isNull(uploads.completedAt),
        sql`${uploads.expiresAt} > now()`,
      ),
    )
    .returning({ id: uploads.id });
  if (claimed.length === 0) throw conflict("An upload to this URL is already in progress.");
}

/** Undoes a failed PUT: nothing of it is kept, and the URL can be used again until it expires. */
async function release(exec: Executor, uploadId: string): Promise<void> {
  await exec.delete(uploadChunks).where(eq(uploadChunks.uploadId, uploadId));
  await exec.update(uploads).set({ startedAt: null }).where(eq(uploads.id, uploadId));
}

/**
 * Streams a PUT body into the database in CHUNK_BYTES rows: over the limit → 413, not a .tar.gz →
 * 422, and in either case nothing is kept. Memory use is one chunk, whatever the tarball's size.
 */
export async function receiveUpload(
  exec: Executor,
  limitBytes: number,
  uploadId: string,
  token: string | undefined,
  body: AsyncIterable<Buffer | string> | undefined,
  contentLength: number | undefined,
): Promise<UploadReceipt> {
  await claim(exec, uploadId, token);
  let seq = 0;
  let total = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let head: Buffer | undefined = Buffer.alloc(0);
  const store = async (data: Buffer) => {
    // base64 text decoded by the server: both drivers pass it far faster than a bytea parameter.
    await exec.execute(
      sql`INSERT INTO upload_chunks (upload_id, seq, data) VALUES (${uploadId}, ${seq}, decode(${data.toString("base64")}, 'base64'))`,
    );
    seq++;
  };
  const check = (bytes: Buffer) => {
    const problem = tarballProblem(bytes);
    if (problem) throw invalid(["body"], problem);
  };
  try {
    if (contentLength !== undefined && contentLength > limitBytes) throw tooLarge(limitBytes);
    for await (const piece of body ?? []) {
      const buf = typeof piece === "string" ? Buffer.from(piece) : piece;
      total += buf.length;
      if (total > limitBytes) throw tooLarge(limitBytes);
      if (head !== undefined) {
        head = Buffer.concat([head, buf.subarray(0, HEAD_BYTES - head.length)]);
        if (head.length >= HEAD_BYTES) {
          check(head);
          head = undefined;
        }
      }
      pending.push(buf);
      pendingBytes += buf.length;
      while (pendingBytes >= CHUNK_BYTES) {
        const all = Buffer.concat(pending, pendingBytes);
        await store(all.subarray(0, CHUNK_BYTES));
        const rest = all.subarray(CHUNK_BYTES);
        pending = rest.length > 0 ? [rest] : [];
        pendingBytes = rest.length;
      }
    }
    if (head !== undefined) check(head);
    if (pendingBytes > 0) await store(Buffer.concat(pending, pendingBytes));
    const [done] = await exec
      .update(uploads)
      .set({ completedAt: sql`now()`, sizeBytes: total })
      .where(eq(uploads.id, uploadId))
      .returning();
    if (!done?.completedAt) throw new HttpError(410, "The deployment was deleted during the upload.");
    return {
      source_tarball_path: done.sourceTarballPath,
      size_bytes: total,
      completed_at: iso(done.completedAt),
    };
  } catch (err) {
    await release(exec, uploadId);
    if (err instanceof HttpError) throw err;
    // The deployment (and with it this upload) was deleted while the body was arriving.
    if (isForeignKeyViolation(err)) throw new HttpError(410, "The deployment was deleted during the upload.");
    // The client went away mid-body: its fault, not the server's.
    if ((err as { code?: string }).code === "ECONNRESET" || (err as Error).message === "aborted") {
      throw badRequest("The upload was interrupted before the body ended.");
    }
    throw err;
  }
}
