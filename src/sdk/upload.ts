// Uploading a directory as an `internal_source` tarball (Node only: it reads the file system).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { buffer } from "node:stream/consumers";
import ignore from "ignore";
import * as tar from "tar";
import { type Slipway, SlipwayError, unwrap } from "./client.ts";

/**
 * Never part of an upload, whatever the ignore file says: version control, dependencies (the build
 * installs them), Slipway's local data, and the local `.env` (secrets go through `secrets`).
 */
export const ALWAYS_SKIPPED: readonly string[] = [".git", "node_modules", ".slipway", ".env"];

/** The ignore files an upload reads, in order of precedence: the first one present is used. */
export const IGNORE_FILES = [".slipwayignore", ".gitignore"] as const;

/** What an upload of a directory leaves out. */
export interface UploadRules {
  /** The ignore file in use (at the directory's root), or null when there is none. */
  file: (typeof IGNORE_FILES)[number] | null;
  /** Whether `path` (relative to the directory, `/`-separated) is left out. */
  ignores(path: string, isDirectory?: boolean): boolean;
}

/**
 * The rules for uploading `dir`: `.slipwayignore` at its root (gitignore syntax), or `.gitignore`
 * when there is no `.slipwayignore`, on top of {@link ALWAYS_SKIPPED}.
 */
export function uploadRules(dir: string): UploadRules {
  const file = IGNORE_FILES.find((f) => existsSync(join(dir, f))) ?? null;
  const matcher = ignore();
  if (file) matcher.add(readFileSync(join(dir, file), "utf8"));
  return {
    file,
    ignores: (path, isDirectory = false) => {
      const rel = path.replace(/^\.\/?/, "").replace(/\/+$/, "");
      if (rel === "") return false;
      if (rel.split("/").some((part) => ALWAYS_SKIPPED.includes(part))) return true;
      return matcher.ignores(isDirectory ? `${rel}/` : rel);
    },
  };
}

/** The directory as a .tar.gz, paths relative to it, without what {@link uploadRules} leave out. */
export async function packDirectory(dir: string): Promise<Buffer> {
  const rules = uploadRules(dir);
  return buffer(
    tar.c(
      {
        gzip: true,
        cwd: dir,
        portable: true,
        // A directory left out is not walked: nothing under it is read.
        filter: (path, stat) => !rules.ignores(path, "isDirectory" in stat && stat.isDirectory()),
      },
      ["."],
    ),
  );
}

/** An upload refused for its size (413): what was sent and, when the server said it, its limit. */
export class UploadTooLargeError extends SlipwayError {
  readonly sizeBytes: number;
  readonly limitBytes: number | undefined;
  constructor(sizeBytes: number, limitBytes: number | undefined, what = "The archive") {
    const limit = limitBytes === undefined ? "the server's upload limit" : formatBytes(limitBytes);
    super(
      413,
      `${what} is ${formatBytes(sizeBytes)}, over ${limit}: leave out what the app does not need ` +
        "with a .slipwayignore file (gitignore syntax), or raise SLIPWAY_UPLOAD_LIMIT_BYTES on the server.",
    );
    this.name = "UploadTooLargeError";
    this.sizeBytes = sizeBytes;
    this.limitBytes = limitBytes;
  }
}

/** `12.3 MB (12,345,678 bytes)`; plain bytes below a kilobyte. */
export function formatBytes(n: number): string {
  const exact = `${n.toLocaleString("en-US")} bytes`;
  if (n < 1024) return exact;
  const units = ["KB", "MB", "GB"];
  let v = n / 1024;
  let unit = 0;
  while (v >= 1024 && unit < units.length - 1) {
    v /= 1024;
    unit++;
  }
  return `${v.toFixed(1)} ${units[unit]} (${exact})`;
}

/** The limit in a 413 answer's detail ("… upload limit of 1048576 bytes."), if it names one. */
function limitIn(detail: string): number | undefined {
  const m = /limit of (\d+) bytes/.exec(detail);
  return m ? Number(m[1]) : undefined;
}

/**
 * Asks for a signed upload URL and PUTs `tarball` there. Returns the `source_tarball_path` to send
 * in `source_revision_config`. A tarball over the server's limit throws {@link UploadTooLargeError}.
 */
export async function uploadTarball(
  client: Slipway,
  deploymentId: string,
  tarball: Uint8Array<ArrayBuffer>,
  what = "The archive",
): Promise<string> {
  const target = await unwrap(
    client.api.POST("/v2/deployments/{deployment_id}/upload-url", {
      params: { path: { deployment_id: deploymentId } },
    }),
  );
  const res = await client.fetch(target.upload_url, {
    method: "PUT",
    headers: { "content-type": "application/gzip" },
    body: tarball,
  });
  if (!res.ok) {
    const body = (await res.json().catch(() => ({}))) as { detail?: unknown };
    const detail = typeof body.detail === "string" ? body.detail : `The upload answered ${res.status}.`;
    if (res.status === 413) throw new UploadTooLargeError(tarball.byteLength, limitIn(detail), what);
    throw new SlipwayError(res.status, detail);
  }
  return target.source_tarball_path;
}

/**
 * Packs `dir` ({@link packDirectory}) and uploads it ({@link uploadTarball}). Returns the
 * `source_tarball_path` to send in `source_revision_config`.
 */
export async function uploadDirectory(client: Slipway, deploymentId: string, dir: string): Promise<string> {
  const tarball = await packDirectory(dir);
  return uploadTarball(client, deploymentId, new Uint8Array(tarball), `The archive of ${dir}`);
}
