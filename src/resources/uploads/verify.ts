import { and, eq, isNotNull } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";
import { uploads } from "../../db/schema/codehost.ts";
import { invalid } from "../../http/errors.ts";

const LOC = ["body", "source_revision_config", "source_tarball_path"];

/** A revision may only point at a tarball that was uploaded, completely, for this deployment. */
export async function verifyUploadedTarball(
  exec: Executor,
  deploymentId: string,
  path: string,
): Promise<void> {
  const [row] = await exec
    .select({ id: uploads.id })
    .from(uploads)
    .where(
      and(
        eq(uploads.sourceTarballPath, path),
        eq(uploads.deploymentId, deploymentId),
        isNotNull(uploads.completedAt),
      ),
    );
  if (!row) {
    throw invalid(
      LOC,
      "Not a completed upload of this deployment: request POST /v2/deployments/{deployment_id}/upload-url and PUT the tarball first.",
    );
  }
}
