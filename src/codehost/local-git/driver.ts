import { createHash } from "node:crypto";
import { readdir, realpath } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { HostUnavailable } from "../errors.ts";
import { type CodehostDriver, fullRefName, type HostRepository, isCommitSha } from "../interface.ts";
import { git } from "./git.ts";
import { isWithin, resolveAllowedDir } from "./paths.ts";

/** How many repositories are inspected at once: each costs one or two short git processes. */
const PARALLEL = 8;

/** A stable id from the repository's real path: 48 bits of SHA-256, a safe JS integer. */
export function repositoryId(realPath: string): number {
  return createHash("sha256").update(realPath).digest().readUIntBE(0, 6);
}

/** The real directory of a repository listed by this driver (its `url` is a file: URL). */
function pathOf(repo: HostRepository): string {
  return fileURLToPath(repo.url);
}

/** The branch HEAD names; for a detached HEAD, `main`, `master` or the first branch. */
async function defaultBranch(dir: string, ceiling: string): Promise<string | undefined> {
  const head = await git(["symbolic-ref", "-q", "--short", "HEAD"], { cwd: dir, ceiling });
  if (head.code === 0) return head.stdout.trim();
  if (head.code !== 1) return undefined; // 128: not a git repository
  const list = await git(["for-each-ref", "--format=%(refname:short)", "refs/heads"], { cwd: dir, ceiling });
  const branches = list.code === 0 ? list.stdout.split("\n").filter(Boolean) : [];
  return branches.find((b) => b === "main") ?? branches.find((b) => b === "master") ?? branches[0];
}

async function inParallel<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * Git repositories (bare or working) directly under one directory of the server, read with the
 * `git` CLI. The directory must still be under SLIPWAY_LOCAL_GIT_ROOTS when it is read.
 */
export class LocalGitDriver implements CodehostDriver {
  constructor(
    private readonly path: string,
    private readonly roots: string[],
  ) {}

  private async root(): Promise<string> {
    const allowed = await resolveAllowedDir(this.path, this.roots);
    if (!allowed.ok)
      throw new HostUnavailable(`The integration's directory cannot be read: ${allowed.reason}`);
    return allowed.path;
  }

  async listRepositories(): Promise<HostRepository[]> {
    const root = await this.root();
    let entries: string[];
    try {
      entries = (await readdir(root, { withFileTypes: true }))
        // Hidden entries are not repositories to offer (`.git` is the directory's own repository).
        .filter((e) => !e.name.startsWith(".") && (e.isDirectory() || e.isSymbolicLink()))
        .map((e) => e.name)
        .sort();
    } catch (err) {
      throw new HostUnavailable(`The integration's directory cannot be read: ${(err as Error).message}`);
    }
    const owner = basename(root);
    const found = await inParallel(entries, PARALLEL, async (name) => {
      // A symlink may point anywhere: only repositories that really live under the directory count.
      const real = await realpath(join(root, name)).catch(() => undefined);
      if (real === undefined || real === root || !isWithin(root, real)) return undefined;
      const branch = await defaultBranch(real, root).catch((err: Error) => {
        throw new HostUnavailable(`Reading repository ${name} failed: ${err.message}`);
      });
      if (branch === undefined) return undefined;
      const repo: HostRepository = {
        id: repositoryId(real),
        name,
        owner,
        url: pathToFileURL(real).href,
        default_branch: branch,
      };
      return repo;
    });
    return found.filter((r): r is HostRepository => r !== undefined);
  }

  async refExists(repo: HostRepository, ref: string): Promise<boolean> {
    const full = fullRefName(ref);
    if (full === undefined) return false;
    const root = await this.root();
    const result = await git(["show-ref", "--verify", "--quiet", full], {
      cwd: pathOf(repo),
      ceiling: root,
    }).catch((err: Error) => {
      throw new HostUnavailable(`Reading repository ${repo.name} failed: ${err.message}`);
    });
    if (result.code === 0) return true;
    if (result.code === 1) return false;
    throw new HostUnavailable(
      `Reading repository ${repo.name} failed: ${result.stderr.trim() || `git exit ${result.code}`}`,
    );
  }

  async cloneUrl(repo: HostRepository): Promise<string> {
    return pathOf(repo);
  }

  /** Runs git in the repository (under the integration's directory); HostUnavailable when it cannot. */
  private async run(repo: HostRepository, args: string[]) {
    const root = await this.root();
    return git(args, { cwd: pathOf(repo), ceiling: root }).catch((err: Error) => {
      throw new HostUnavailable(`Reading repository ${repo.name} failed: ${err.message}`);
    });
  }

  async readFile(repo: HostRepository, sha: string, path: string): Promise<string | undefined> {
    if (!isCommitSha(sha) || path.startsWith("-")) return undefined;
    const result = await this.run(repo, ["cat-file", "blob", `${sha}:${path.replace(/^\.\//, "")}`]);
    return result.code === 0 ? result.stdout : undefined;
  }

  /** Every branch's head commit, by branch name. */
  async branchHeads(repo: HostRepository): Promise<Map<string, string>> {
    const result = await this.run(repo, ["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads"]);
    if (result.code !== 0) {
      throw new HostUnavailable(`Reading the branches of ${repo.name} failed: ${result.stderr.trim()}`);
    }
    const heads = new Map<string, string>();
    for (const line of result.stdout.split("\n")) {
      const m = /^([0-9a-f]{40}) refs\/heads\/(.+)$/.exec(line);
      if (m?.[1] && m[2]) heads.set(m[2], m[1]);
    }
    return heads;
  }

  /** The paths that differ between two commits; undefined when either is gone (then nothing can be ruled out). */
  async changedFiles(repo: HostRepository, from: string, to: string): Promise<string[] | undefined> {
    if (!isCommitSha(from) || !isCommitSha(to)) return undefined;
    const result = await this.run(repo, ["diff", "--name-only", "--no-renames", "-z", from, to]);
    if (result.code !== 0) return undefined;
    return result.stdout.split("\0").filter(Boolean);
  }
}
