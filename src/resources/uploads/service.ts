import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type { Config } from "../../config.ts";
import { peekDeployment } from "../../core/deployments/read-store.ts";
import {
  badRequest,
  conflict,
  DomainError,
  forbidden,
  gone,
  invalid,
  notFound,
  tooLarge,
} from "../../core/errors.ts";
import { iso } from "../../core/shapes.ts";
import type { Executor } from "../../db/client.ts";
import { isForeignKeyViolation } from "../../db/errors.ts";
import type { UploadClaims } from "./claims.ts";
import type { UploadReceipt, UploadUrl } from "./schema.ts";
import {
  completeUpload,
  deleteExpiredUploads,
  insertChunk,
  insertUpload,
  markStarted,
  resetUpload,
  uploadForClaim,
} from "./store.ts";
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
  const deployment = await peekDeployment(exec, scope.workspaceId, deploymentId);
  if (!deployment) throw notFound("Deployment not found.");
  if (deployment.source !== "internal_source") {
    throw badRequest(
      `Uploads are for internal_source deployments; this one's source is ${deployment.source}.`,
    );
  }
  if (deployment.status === "AWAITING_DELETE") throw badRequest("The deployment is being deleted.");
  // URLs that expired unused hold nothing worth keeping (and perhaps the chunks of an aborted PUT).
  await deleteExpiredUploads(exec, deploymentId);
  const id = randomUUID();
  const token = randomBytes(32).toString("base64url");
  const path = `uploads/${deploymentId}/${id}.tar.gz`;
  const expiresAt = await insertUpload(exec, {
    id,
    deploymentId,
    path,
    tokenHash: hashToken(token).toString("hex"),
    ttl: URL_TTL,
  });
  return {
    upload_url: `${config.publicUrl}${config.basePath}/v2/uploads/${id}?token=${token}`,
    source_tarball_path: path,
    object_path: path,
    expires_at: iso(expiresAt),
  };
}

const overLimit = (limit: number) =>
  tooLarge(`The tarball is larger than the upload limit of ${limit} bytes.`);

/**
 * Checks the URL's token and claims the upload for this PUT: a claimed or finished upload is not
 * written twice, an expired one not at all.
 */
async function claim(
  exec: Executor,
  claims: UploadClaims,
  uploadId: string,
  token: string | undefined,
): Promise<void> {
  const row = await uploadForClaim(exec, uploadId);
  if (!row) throw notFound("Upload not found.");
  const given = hashToken(token ?? "");
  if (token === undefined || !timingSafeEqual(given, Buffer.from(row.tokenHash, "hex"))) {
    throw forbidden("The upload token is missing or wrong: use the whole upload_url.");
  }
  if (row.completedAt !== null) throw conflict("This upload URL was already used: request a new one.");
  if (row.expired) throw gone("This upload URL has expired: request a new one.");
  if (!(await markStarted(exec, uploadId, claims.key)))
    throw conflict("An upload to this URL is already in progress.");
}

/**
 * Streams a PUT body into the database in CHUNK_BYTES rows: over the limit → 413, not a .tar.gz →
 * 422, and in either case nothing is kept. Memory use is one chunk, whatever the tarball's size.
 */
export async function receiveUpload(
  exec: Executor,
  claims: UploadClaims,
  limitBytes: number,
  uploadId: string,
  token: string | undefined,
  body: AsyncIterable<Buffer | string> | undefined,
  contentLength: number | undefined,
): Promise<UploadReceipt> {
  // This process's lock is held until the PUT ends: a crash lets the next PUT take the URL over.
  return claims.during(async () => {
    await claim(exec, claims, uploadId, token);
    return receiveBody(exec, limitBytes, uploadId, body, contentLength);
  });
}

async function receiveBody(
  exec: Executor,
  limitBytes: number,
  uploadId: string,
  body: AsyncIterable<Buffer | string> | undefined,
  contentLength: number | undefined,
): Promise<UploadReceipt> {
  let seq = 0;
  let total = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let head: Buffer | undefined = Buffer.alloc(0);
  const store = async (data: Buffer) => {
    await insertChunk(exec, uploadId, seq, data);
    seq++;
  };
  const check = (bytes: Buffer) => {
    const problem = tarballProblem(bytes);
    if (problem) throw invalid(["body"], problem);
  };
  try {
    if (contentLength !== undefined && contentLength > limitBytes) throw overLimit(limitBytes);
    for await (const piece of body ?? []) {
      const buf = typeof piece === "string" ? Buffer.from(piece) : piece;
      total += buf.length;
      if (total > limitBytes) throw overLimit(limitBytes);
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
    const done = await completeUpload(exec, uploadId, total);
    if (!done?.completedAt) throw gone("The deployment was deleted during the upload.");
    return {
      source_tarball_path: done.sourceTarballPath,
      size_bytes: total,
      completed_at: iso(done.completedAt),
    };
  } catch (err) {
    // Undoes the failed PUT: nothing of it is kept, and the URL can be used again until it expires.
    await resetUpload(exec, uploadId);
    if (err instanceof DomainError) throw err;
    // The deployment (and with it this upload) was deleted while the body was arriving.
    if (isForeignKeyViolation(err)) throw gone("The deployment was deleted during the upload.");
    // The client went away mid-body: its fault, not the server's.
    if ((err as { code?: string }).code === "ECONNRESET" || (err as Error).message === "aborted") {
      throw badRequest("The upload was interrupted before the body ended.");
    }
    throw err;
  }
}
