// Uploading a directory as an `internal_source` tarball (Node only: it reads the file system).
import { buffer } from "node:stream/consumers";
import * as tar from "tar";
import { type Slipway, SlipwayError, unwrap } from "./client.ts";

/** Never part of an upload: version control, dependencies (the build installs them), local data. */
const SKIPPED = new Set([".git", "node_modules", ".slipway", ".env"]);

/** The directory as a .tar.gz, paths relative to it. */
export async function packDirectory(dir: string): Promise<Buffer> {
  return buffer(
    tar.c(
      {
        gzip: true,
        cwd: dir,
        portable: true,
        filter: (path) => !path.split("/").some((part) => SKIPPED.has(part)),
      },
      ["."],
    ),
  );
}

/**
 * Packs `dir`, asks for a signed upload URL and PUTs the tarball there. Returns the
 * `source_tarball_path` to send in `source_revision_config`.
 */
export async function uploadDirectory(client: Slipway, deploymentId: string, dir: string): Promise<string> {
  const tarball = await packDirectory(dir);
  const target = await unwrap(
    client.api.POST("/v2/deployments/{deployment_id}/upload-url", {
      params: { path: { deployment_id: deploymentId } },
    }),
  );
  const res = await client.fetch(target.upload_url, {
    method: "PUT",
    headers: { "content-type": "application/gzip" },
    body: new Uint8Array(tarball),
  });
  if (!res.ok) {
    const body = (await res.json().catch(() => ({}))) as { detail?: unknown };
    throw new SlipwayError(
      res.status,
      typeof body.detail === "string" ? body.detail : `The upload answered ${res.status}.`,
    );
  }
  return target.source_tarball_path;
}
