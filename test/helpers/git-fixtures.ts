import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: "Slipway Test",
  GIT_AUTHOR_EMAIL: "test@slipway.invalid",
  GIT_COMMITTER_NAME: "Slipway Test",
  GIT_COMMITTER_EMAIL: "test@slipway.invalid",
};

export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, env: GIT_ENV, encoding: "utf8" }).trim();
}

/** A working repository whose HEAD is `branch`, with one commit and the tag v1. */
export function workingRepo(dir: string, branch: string): string {
  mkdirSync(dir, { recursive: true });
  git(dir, "init", "-q", "-b", branch);
  writeFileSync(join(dir, "README.md"), `# ${dir}\n`);
  git(dir, "add", "README.md");
  git(dir, "commit", "-q", "-m", "first");
  git(dir, "tag", "v1");
  return dir;
}

export interface GitRoot {
  /** The allowed root (SLIPWAY_LOCAL_GIT_ROOTS). */
  root: string;
  /** The integration's directory, `<root>/team`, holding the repositories. */
  team: string;
  /** A directory outside the root, with a repository in it. */
  outside: string;
}

/**
 * Under `<root>/team`: working repos `alpha` (main, branch feature/x, tag v1) and `gamma` (HEAD
 * `trunk`), bare `beta.git` (HEAD `develop`), a repo with no commits `empty` (HEAD main), and
 * things that are not repositories here (`team` itself is one, so git must not look upwards): a plain directory with a repo nested deeper, a file, and
 * a symlink to a repository outside the root.
 */
export function makeGitRoot(): GitRoot {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "slipway-git-")));
  const root = join(base, "root");
  const team = join(root, "team");
  const outside = join(base, "outside");
  mkdirSync(team, { recursive: true });
  // The integration directory is itself inside a repository: its plain subdirectories must still not count.
  git(team, "init", "-q", "-b", "main");
  const alpha = workingRepo(join(team, "alpha"), "main");
  git(alpha, "branch", "feature/x");
  workingRepo(join(team, "gamma"), "trunk");
  const seed = workingRepo(join(base, "seed"), "develop");
  git(base, "clone", "-q", "--bare", seed, join(team, "beta.git"));
  mkdirSync(join(team, "empty"));
  git(join(team, "empty"), "init", "-q", "-b", "main");
  mkdirSync(join(team, "notes"));
  workingRepo(join(team, "notes", "nested"), "main");
  writeFileSync(join(team, "file.txt"), "not a repository\n");
  workingRepo(join(outside, "secret"), "main");
  symlinkSync(join(outside, "secret"), join(team, "escape"));
  return { root, team, outside };
}
