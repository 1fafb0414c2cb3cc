import { invalid } from "../../core/errors.ts";
import type { Executor } from "../../db/client.ts";
import { completedUploadId } from "./store.ts";

const LOC = ["body", "source_revision_config", "source_tarball_path"];

/** A revision may only point at a tarball that was uploaded, completely, for this deployment. */
export async function verifyUploadedTarball(
  exec: Executor,
  deploymentId: string,
  path: string,
): Promise<void> {
  if ((await completedUploadId(exec, path, deploymentId)) === undefined) {
    throw invalid(
      LOC,
      "Not a completed upload of this deployment: request POST /v2/deployments/{deployment_id}/upload-url and PUT the tarball first.",
    );
  }
}
