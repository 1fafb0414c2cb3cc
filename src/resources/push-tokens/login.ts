import type { Config } from "../../config.ts";
import type { RegistryLogin } from "../../runtimes/remote/builder.ts";
import { registryHost, repositoryPath } from "../../runtimes/remote/image-ref.ts";

/** The user name token logins use; Slipway's token endpoint reads only the password. */
export const TOKEN_USERNAME = "slipway";

/**
 * How Slipway's own builds log in to push: with registry token auth, a push token for the one
 * repository being built (so a build can touch no other); else the configured credential, if any.
 */
export function registryLogin(
  listeners: Pick<Config["listeners"], "registryUsername" | "registryPassword" | "registryToken">,
): RegistryLogin {
  const tokens = listeners.registryToken;
  if (tokens) {
    return (repo) => ({
      username: TOKEN_USERNAME,
      password: tokens.signer.pushToken(
        {
          subject: `deployment:${repo.deploymentId}`,
          workspaceId: repo.workspaceId,
          deploymentId: repo.deploymentId,
          repository: repo.path,
          actions: ["pull", "push"],
        },
        tokens.pushTtlS,
      ).token,
    });
  }
  const { registryUsername: username, registryPassword: password } = listeners;
  return () => (username !== undefined && password !== undefined ? { username, password } : undefined);
}

/** How a listener's cluster pulls an image from Slipway's registry (its imagePullSecret). */
export interface PullCredentials {
  registry: string;
  username: string;
  password: string;
  /** When the password stops working; the desired state hands out a new one at half its life. */
  expires_at: string | null;
}

type PullConfig = Pick<
  Config["listeners"],
  "registryUrl" | "registryUsername" | "registryPassword" | "registryToken"
>;

/** Changes when pull credentials are re-issued, so a listener's desired state changes with them. */
export function credentialEpoch(listeners: PullConfig, now = Date.now()): number {
  const tokens = listeners.registryToken;
  return tokens ? Math.floor(now / (tokens.pullTtlS * 500)) : 0;
}

/**
 * Credentials for a listener's cluster to pull `image`, or null when it is not in Slipway's
 * registry or the registry needs none. With token auth: pull only, that one repository, issued at
 * the start of the current epoch so every answer within it carries the same expiry.
 */
export function pullCredentials(
  listeners: PullConfig,
  who: { listenerId: string; workspaceId: string; deploymentId: string },
  image: string,
  now = Date.now(),
): PullCredentials | null {
  const url = listeners.registryUrl;
  if (url === undefined) return null;
  const host = registryHost(url);
  if (!image.startsWith(`${host}/`)) return null;
  const name = image.split("@")[0] ?? image;
  const colon = name.lastIndexOf(":");
  const repository = colon > name.lastIndexOf("/") ? name.slice(0, colon) : name;
  const tokens = listeners.registryToken;
  if (tokens) {
    const issuedAt = credentialEpoch(listeners, now) * tokens.pullTtlS * 500;
    const issued = tokens.signer.pushToken(
      {
        subject: `listener:${who.listenerId}`,
        workspaceId: who.workspaceId,
        deploymentId: who.deploymentId,
        repository: repositoryPath(url, repository),
        actions: ["pull"],
      },
      tokens.pullTtlS,
      issuedAt,
    );
    return {
      registry: host,
      username: TOKEN_USERNAME,
      password: issued.token,
      expires_at: issued.expiresAt.toISOString(),
    };
  }
  const { registryUsername: username, registryPassword: password } = listeners;
  if (username === undefined || password === undefined) return null;
  return { registry: host, username, password, expires_at: null };
}
