import { InstallationNotFound } from "../errors.ts";
import { type CodehostDriver, fullRefName, type HostRepository, isCommitSha } from "../interface.ts";
import { type GithubApp, githubClient, statusOf, upstreamError } from "./client.ts";

/** Repositories of one GitHub App installation, through the GitHub REST API. */
export class GithubDriver implements CodehostDriver {
  constructor(
    private readonly app: GithubApp,
    private readonly installationId: number,
  ) {}

  async listRepositories(): Promise<HostRepository[]> {
    try {
      const octokit = githubClient(this.app, this.installationId);
      const repos = await octokit.paginate(octokit.rest.apps.listReposAccessibleToInstallation, {
        per_page: 100,
      });
      return repos
        .map((r) => ({
          id: r.id,
          name: r.name,
          owner: r.owner.login,
          url: r.html_url,
          default_branch: r.default_branch,
        }))
        .sort((a, b) => a.owner.localeCompare(b.owner) || a.name.localeCompare(b.name) || a.id - b.id);
    } catch (err) {
      throw upstreamError(err, "listing the installation's repositories");
    }
  }

  async refExists(repo: HostRepository, ref: string): Promise<boolean> {
    const full = fullRefName(ref);
    if (full === undefined) return false;
    try {
      const octokit = githubClient(this.app, this.installationId);
      await octokit.rest.git.getRef({ owner: repo.owner, repo: repo.name, ref: full.slice("refs/".length) });
      return true;
    } catch (err) {
      // 404: no such ref; 409: the repository is empty, so it has no refs at all.
      const status = statusOf(err);
      if (status === 404 || status === 409) return false;
      throw upstreamError(err, `looking up ${ref} in ${repo.owner}/${repo.name}`);
    }
  }

  async cloneUrl(repo: HostRepository): Promise<string> {
    let token: string;
    try {
      const octokit = githubClient(this.app, this.installationId);
      token = ((await octokit.auth({ type: "installation" })) as { token: string }).token;
    } catch (err) {
      throw upstreamError(err, "creating an installation token");
    }
    const url = new URL(repo.url);
    url.username = "x-access-token";
    url.password = token;
    return url.href;
  }

  async readFile(repo: HostRepository, sha: string, path: string): Promise<string | undefined> {
    if (!isCommitSha(sha)) return undefined;
    try {
      const octokit = githubClient(this.app, this.installationId);
      const { data } = await octokit.rest.repos.getContent({
        owner: repo.owner,
        repo: repo.name,
        path: path.replace(/^\.\//, ""),
        ref: sha,
      });
      return fileText(data);
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw upstreamError(err, `reading ${path} of ${repo.owner}/${repo.name} at ${sha.slice(0, 12)}`);
    }
  }
}

/** What the contents API answers for a file (a directory is an array). */
interface ContentFile {
  type?: unknown;
  encoding?: unknown;
  content?: unknown;
}

/** The text of a file from the contents API's answer; undefined for anything but a file. */
function fileText(data: unknown): string | undefined {
  if (Array.isArray(data) || typeof data !== "object" || data === null) return undefined;
  const f = data as ContentFile;
  if (f.type !== "file" || typeof f.content !== "string") return undefined;
  return f.encoding === "base64" ? Buffer.from(f.content, "base64").toString("utf8") : f.content;
}

/** The account an installation belongs to (its login names the integration); InstallationNotFound if none. */
export async function installationAccount(app: GithubApp, installationId: number): Promise<string> {
  try {
    const octokit = githubClient(app);
    const { data } = await octokit.rest.apps.getInstallation({ installation_id: installationId });
    const account = data.account as { login?: string; slug?: string; name?: string } | null;
    return account?.login ?? account?.slug ?? account?.name ?? `installation-${installationId}`;
  } catch (err) {
    if (statusOf(err) === 404) {
      throw new InstallationNotFound("The GitHub App has no installation with this id.");
    }
    throw upstreamError(err, "reading the installation");
  }
}
