/**
 * What the API needs from a code host: the repositories an integration makes available, whether a
 * ref exists in one of them, and a URL that `git clone` can use. Drivers throw `badGateway` (502)
 * when the host cannot answer, never a bare error that would become a 500.
 */

/** A repository as the interface's record shows it, minus the integration id the API adds. */
export interface HostRepository {
  /** Stable integer id (the host's own, or derived from the path for local git). */
  id: number;
  name: string;
  owner: string;
  /** What clients copy into `source_config.repo_url`. */
  url: string;
  default_branch: string;
}

/** The interface's code-host repository record. */
export interface CodehostRepository extends HostRepository {
  host_integration_id: string;
}

export interface CodehostDriver {
  /** Every repository the integration makes available (all pages), sorted for a stable listing. */
  listRepositories(): Promise<HostRepository[]>;
  /** Whether `ref` (a branch name, `refs/heads/…` or `refs/tags/…`) exists in the repository. */
  refExists(repo: HostRepository, ref: string): Promise<boolean>;
  /** A URL or path `git clone` can fetch the repository from, with any credential it needs. */
  cloneUrl(repo: HostRepository): Promise<string>;
}

/** The ref as a full ref name; undefined when it cannot name a branch or tag (git's ref rules). */
export function fullRefName(ref: string): string | undefined {
  if (
    ref === "" ||
    ref.length > 255 ||
    ref.startsWith("-") ||
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
    /[\x00-\x20\x7f~^:?*[\\]|\.\.|@\{|\/\/|\/$|^\/|\.$|\.lock$|\/\./.test(ref)
  ) {
    return undefined;
  }
  if (ref.startsWith("refs/")) {
    return /^refs\/(heads|tags)\/./.test(ref) ? ref : undefined;
  }
  return `refs/heads/${ref}`;
}

/**
 * The repository a client's `repo_url` names: an exact match first; otherwise the one match when
 * a trailing slash or `.git` is ignored (hosts print both forms).
 */
export function findRepository<T extends HostRepository>(repos: T[], url: string): T | undefined {
  const exact = repos.find((r) => r.url === url);
  if (exact) return exact;
  const norm = (u: string) =>
    u
      .trim()
      .replace(/\/+$/, "")
      .replace(/\.git$/, "");
  const loose = repos.filter((r) => norm(r.url) === norm(url));
  return loose.length === 1 ? loose[0] : undefined;
}
