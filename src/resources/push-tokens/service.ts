import type { Config } from "../../config.ts";
import { peekDeployment } from "../../core/deployments/read-store.ts";
import { badRequest, conflict, notFound, unauthorized } from "../../core/errors.ts";
import type { RegistryAccess, RegistryAction } from "../../crypto/registry-token.ts";
import type { Reader } from "../../db/client.ts";
import { imageRepository, repositoryPath } from "../../runtimes/remote/image-ref.ts";
import { deploymentPushToken, TOKEN_USERNAME } from "./login.ts";
import type { PushToken, RegistryBearer } from "./schema.ts";

export type PushTokenConfig = Pick<
  Config["listeners"],
  "registryUrl" | "registryUsername" | "registryPassword" | "registryToken"
>;

/** Docker clients answer a Basic challenge with the credentials they logged in with. */
const refused = (msg: string) => unauthorized(msg, 'Basic realm="Slipway registry tokens"');
/** Registry bearer tokens are short: a client asks again when one runs out. */
const BEARER_TTL_S = 300;

function registryOf(registry: PushTokenConfig): string {
  const url = registry.registryUrl;
  if (url === undefined) {
    throw conflict("This server has no image registry to push to (SLIPWAY_REGISTRY_URL is not set).");
  }
  return url;
}

/**
 * Credentials for pushing a deployment's images to SLIPWAY_REGISTRY_URL. With registry token auth
 * (SLIPWAY_REGISTRY_TOKEN_*) a token for this deployment's repository alone that expires; without
 * it the registry checks its own credential, so the configured one is handed out (docs/registry.md says so).
 */
export async function issuePushToken(
  exec: Reader,
  registry: PushTokenConfig,
  scope: { workspaceId: string },
  deploymentId: string,
): Promise<PushToken> {
  const deployment = await peekDeployment(exec, scope.workspaceId, deploymentId);
  if (!deployment) throw notFound("Deployment not found.");
  const url = registryOf(registry);
  const repository = imageRepository(url, scope.workspaceId, deployment.name);
  // The workspace's namespace in the registry: the hosted service's CLI pushes to
  // `{registry_url}/{name}:{tag}`, which is then exactly `repository`, the token's scope.
  const namespace = repository.slice(0, repository.length - deployment.name.length - 1);
  const tokens = registry.registryToken;
  if (tokens) {
    const issued = deploymentPushToken(tokens, {
      workspaceId: scope.workspaceId,
      deploymentId,
      path: repositoryPath(url, repository),
    });
    return {
      token: issued.token,
      username: TOKEN_USERNAME,
      registry_url: namespace,
      repository,
      expires_at: issued.expiresAt.toISOString(),
    };
  }
  return {
    token: registry.registryPassword ?? null,
    username: registry.registryUsername ?? null,
    registry_url: namespace,
    repository,
    expires_at: null,
  };
}

/** `repository:<name>:<actions>` scopes of a token request; other resource types are granted nothing. */
function requested(scopes: string[]): RegistryAccess[] {
  const out: RegistryAccess[] = [];
  for (const scope of scopes) {
    for (const one of scope.split(" ")) {
      // The name may hold a port-less path but never a colon; actions are the last part.
      const m = /^repository:([a-z0-9._/-]+):([a-z,*]+)$/.exec(one);
      if (!m) {
        if (one.trim())
          throw badRequest(`Unknown scope "${one}": only repository:<name>:<actions> is served.`);
        continue;
      }
      const actions = (m[2] ?? "")
        .split(",")
        .filter((a): a is RegistryAction => a === "pull" || a === "push");
      out.push({ type: "repository", name: m[1] ?? "", actions });
    }
  }
  return out;
}

/** The password of an `Authorization: Basic` header, if any. */
function basicPassword(header: string | undefined): string | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? "");
  if (!m) return undefined;
  const decoded = Buffer.from(m[1] ?? "", "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

export interface TokenRequest {
  authorization: string | undefined;
  service: string | undefined;
  scopes: string[];
}

/**
 * The registry's token endpoint (Docker token authentication): a push token in Basic auth is
 * exchanged for a bearer granting what was asked of its own repository and nothing else. A token
 * whose deployment is gone is refused, so deleting a deployment ends its pushes at once.
 */
export async function exchangeToken(
  exec: Reader,
  registry: PushTokenConfig,
  req: TokenRequest,
): Promise<RegistryBearer> {
  const tokens = registry.registryToken;
  if (!tokens)
    throw notFound("This server is not a registry token server (SLIPWAY_REGISTRY_TOKEN_* is not set).");
  if (req.service !== undefined && req.service !== tokens.signer.service) {
    throw badRequest(
      `Unknown service "${req.service}": this server issues tokens for "${tokens.signer.service}".`,
    );
  }
  const access = requested(req.scopes);
  const password = basicPassword(req.authorization);
  if (password === undefined)
    throw refused("Log in with a push token (POST /v2/deployments/{id}/push-token).");
  const grant = tokens.signer.readPushToken(password);
  if (!grant) throw refused("The push token is not valid or has expired.");
  const deployment = await peekDeployment(exec, grant.workspaceId, grant.deploymentId);
  // Being deleted counts as gone: its images are about to have no owner.
  if (!deployment || deployment.status === "AWAITING_DELETE") {
    throw refused("The push token's deployment no longer exists.");
  }
  const granted = access
    .filter((a) => a.name === grant.repository)
    .map((a) => ({ ...a, actions: a.actions.filter((x) => grant.actions.includes(x)) }))
    .filter((a) => a.actions.length > 0);
  const issuedAt = new Date();
  const token = tokens.signer.bearer(grant.subject, granted, BEARER_TTL_S, issuedAt.getTime());
  return { token, access_token: token, expires_in: BEARER_TTL_S, issued_at: issuedAt.toISOString() };
}
