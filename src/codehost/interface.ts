/**
 * What the API needs from a code host: the repositories an integration makes available, whether a
 * ref exists in one of them, and a URL that `git clone` can use. Drivers throw `HostUnavailable`
 * (errors.ts) when the host cannot answer, never a bare error that would become a 500.
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
  /** The text of `path` at commit `sha` (a 40-hex id); undefined when there is no such file there. */
  readFile(repo: HostRepository, sha: string, path: string): Promise<string | undefined>;
}

/** A full commit id, as pushes and polls name commits. */
export const isCommitSha = (sha: string): boolean => /^[0-9a-f]{40}$/.test(sha);

/**
 * A repository URL as pushes and deployments are matched by: case, a trailing slash and a `.git`
 * suffix do not matter (hosts print every form).
 */
export function normalizeRepoUrl(url: string): string {
  return url
    .trim()
    .toLowerCase()
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .replace(/\/+$/, "");
}

/**
 * The ref as a full ref name; undefined when it cannot name a branch or tag. git check-ref-format's
 * rules, for what a client can name: a branch, `refs/heads/…` or `refs/tags/…`. The one ref rule:
 * request checks and drivers both use it.
 */
export function fullRefName(ref: string): string | undefined {
  if (
    ref.length > 255 ||
    ref === "@" ||
    ref.startsWith("-") ||
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
    /[\x00-\x20\x7f~^:?*[\\]|\.\.|@\{|\.$|\.lock$/.test(ref) ||
    // Every path component is non-empty and none starts with "." (so no leading or trailing "/").
    ref.split("/").some((part) => part === "" || part.startsWith("."))
  ) {
    return undefined;
  }
  if (ref.startsWith("refs/")) {
    return /^refs\/(heads|tags)\/./.test(ref) ? ref : undefined;
  }
  return `refs/heads/${ref}`;
}

export const isValidRef = (ref: string): boolean => fullRefName(ref) !== undefined;

export const isTagRef = (ref: string | null | undefined): boolean =>
  typeof ref === "string" && ref.startsWith("refs/tags/");

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
