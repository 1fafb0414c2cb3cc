/**
 * Where an image built for a listener goes: `<registry>/<workspace id>/<deployment name>`, tagged
 * with the revision id. The one place that names it (the build and the push token both use it).
 */
export function imageRepository(registryUrl: string, workspaceId: string, deploymentName: string): string {
  return `${registryUrl}/${workspaceId}/${deploymentName}`;
}

/** The repository's path inside the registry (what a token's scope and `/v2/<name>/…` name). */
export function repositoryPath(registryUrl: string, repository: string): string {
  const host = registryHost(registryUrl);
  return repository.startsWith(`${host}/`) ? repository.slice(host.length + 1) : repository;
}

/** The registry's host[:port], which `podman login` takes (SLIPWAY_REGISTRY_URL may add a path). */
export function registryHost(registryUrl: string): string {
  return registryUrl.split("/")[0] ?? registryUrl;
}

/** An image reference's repository (`[registry/]name`) and tag; no tag when it names none (or only a digest). */
export function splitImageRef(ref: string): { repository: string; tag: string | undefined } {
  const name = ref.split("@")[0] ?? ref;
  const colon = name.lastIndexOf(":");
  return colon > name.lastIndexOf("/")
    ? { repository: name.slice(0, colon), tag: name.slice(colon + 1) }
    : { repository: name, tag: undefined };
}
