import type { Config, RegistryTokenConfig } from "../../config.ts";
import type { RegistryCredentials } from "../../protocol/listener.ts";
import type { RegistryLogin } from "../../runtimes/remote/builder.ts";
import { registryHost, repositoryPath, splitImageRef } from "../../runtimes/remote/image-ref.ts";

/** The user name token logins use; Slipway's token endpoint reads only the password. */
export const TOKEN_USERNAME = "slipway";

/** A push token for a deployment's repository (`path` inside the registry): pull and push, nothing else. */
export function deploymentPushToken(
  tokens: RegistryTokenConfig,
  repo: { workspaceId: string; deploymentId: string; path: string },
): { token: string; expiresAt: Date } {
  return tokens.signer.pushToken(
    {
      subject: `deployment:${repo.deploymentId}`,
      workspaceId: repo.workspaceId,
      deploymentId: repo.deploymentId,
      repository: repo.path,
      actions: ["pull", "push"],
    },
    tokens.pushTtlS,
  );
}

/**
 * How Slipway's own builds log in to push: with registry token auth, a push token for the one
 * repository being built (so a build can touch no other); else the configured credential, if any.
 */
export function registryLogin(
  listeners: Pick<Config["listeners"], "registryUsername" | "registryPassword" | "registryToken">,
): RegistryLogin {
  const tokens = listeners.registryToken;
  if (tokens)
    return (repo) => ({ username: TOKEN_USERNAME, password: deploymentPushToken(tokens, repo).token });
  const { registryUsername: username, registryPassword: password } = listeners;
  return () => (username !== undefined && password !== undefined ? { username, password } : undefined);
}

type PullConfig = Pick<
  Config["listeners"],
  "registryUrl" | "registryUsername" | "registryPassword" | "registryToken"
>;

/** Pull credentials are re-issued at half their life: the epoch is that half-life's number. */
const halfLifeMs = (tokens: RegistryTokenConfig) => tokens.pullTtlS * 500;

/** Changes when pull credentials are re-issued, so a listener's desired state changes with them. */
export function credentialEpoch(listeners: PullConfig, now = Date.now()): number {
  const tokens = listeners.registryToken;
  return tokens ? Math.floor(now / halfLifeMs(tokens)) : 0;
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
): RegistryCredentials | null {
  const url = listeners.registryUrl;
  if (url === undefined) return null;
  const host = registryHost(url);
  if (!image.startsWith(`${host}/`)) return null;
  const tokens = listeners.registryToken;
  if (tokens) {
    const issued = tokens.signer.pushToken(
      {
        subject: `listener:${who.listenerId}`,
        workspaceId: who.workspaceId,
        deploymentId: who.deploymentId,
        repository: repositoryPath(url, splitImageRef(image).repository),
        actions: ["pull"],
      },
      tokens.pullTtlS,
      credentialEpoch(listeners, now) * halfLifeMs(tokens),
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
