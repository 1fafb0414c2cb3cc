import type { Config } from "../../config.ts";
import type { Reader } from "../../db/client.ts";
import { conflict, notFound } from "../../http/errors.ts";
import { imageRepository, registryHost } from "../../runtimes/remote/image-ref.ts";
import { peekDeployment } from "../deployments/store.ts";
import type { PushToken } from "./schema.ts";

export type PushTokenConfig = Pick<
  Config["listeners"],
  "registryUrl" | "registryUsername" | "registryPassword"
>;

/**
 * Credentials for pushing a deployment's images to SLIPWAY_REGISTRY_URL. The registry checks its
 * own credentials, so what this hands out is the configured one, unscoped and without expiry
 * (README "Running on Kubernetes" says so); the repository is the one Slipway pushes builds to.
 */
export async function issuePushToken(
  exec: Reader,
  registry: PushTokenConfig,
  scope: { workspaceId: string },
  deploymentId: string,
): Promise<PushToken> {
  const deployment = await peekDeployment(exec, scope.workspaceId, deploymentId);
  if (!deployment) throw notFound("Deployment not found.");
  const url = registry.registryUrl;
  if (url === undefined) {
    throw conflict("This server has no image registry to push to (SLIPWAY_REGISTRY_URL is not set).");
  }
  return {
    token: registry.registryPassword ?? null,
    username: registry.registryUsername ?? null,
    registry_url: registryHost(url),
    repository: imageRepository(url, scope.workspaceId, deployment.name),
    expires_at: null,
  };
}
