import { execFile } from "node:child_process";
import { dirname } from "node:path";
import { SourceError } from "../interface.ts";
import { abortError, run } from "../shared/exec.ts";
import type { Layout } from "../shared/layout.ts";
import { diskUsage, withDiskLimit } from "./disk-limit.ts";
import { type LocalLimits, sourceTooLarge, tooManyFiles } from "./limits.ts";

/** Environment for git: no prompts, no system config, English messages we can match. */
export function gitEnv(layout: Layout): Record<string, string> {
  return {
    PATH: process.env.PATH || "/usr/local/bin:/usr/bin:/bin",
    HOME: layout.homeDir,
    LANG: "C",
    LC_ALL: "C",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_NOSYSTEM: "1",
  };
}

export interface GitCheckout {
  url: string;
  ref: string;
  commitSha?: string;
  dir: string;
  env: Record<string, string>;
  signal: AbortSignal;
  log: (line: string) => void;
  limits: Pick<LocalLimits, "sourceBytes" | "sourceMaxFiles">;
}

const WHAT = "the repository";
const tooLarge = (o: GitCheckout) => sourceTooLarge(WHAT, o.limits.sourceBytes, "checked out");

/** Hides the user-info part of a URL (installation tokens) wherever it would be shown. */
export function redactUrl(url: string): { shown: string; hide: (line: string) => string } {
  let secrets: string[] = [];
  try {
    const u = new URL(url);
    secrets = [u.password, u.username].filter((s) => s.length > 0).map((s) => decodeURIComponent(s));
    if (secrets.length > 0) {
      u.username = "***";
      u.password = "";
    }
    const shown = secrets.length > 0 ? u.toString() : url;
    return {
      shown,
      hide: (line) => secrets.reduce((acc, s) => acc.split(s).join("***"), line),
    };
  } catch {
    return { shown: url, hide: (line) => line };
  }
}

function git(args: string[], cwd: string, env: Record<string, string>, signal: AbortSignal) {
  return new Promise<{ ok: boolean; stdout: string }>((resolve) => {
    execFile("git", args, { cwd, env, signal, maxBuffer: 1 << 20 }, (err, stdout) => {
      resolve({ ok: err === null, stdout: String(stdout).trim() });
    });
  });
}

/** Git options no repository or URL may override: no `ext::` transports running commands. */
const SAFE = ["-c", "protocol.ext.allow=never", "-c", "advice.detachedHead=false"];

/**
 * Clones `url` into `dir` and checks out `commitSha`, else `ref` (a branch name, `refs/heads/…`,
 * `refs/tags/…`, or a bare tag name). Returns the checked-out commit. Unresolvable → SourceError.
 */
export async function cloneAt(o: GitCheckout): Promise<string> {
  const { shown, hide } = redactUrl(o.url);
  const log = (line: string) => o.log(hide(line));
  if (o.url.startsWith("-") || o.ref.startsWith("-") || o.commitSha?.startsWith("-")) {
    throw new SourceError("the repository URL and ref must not start with '-'");
  }
  log(`Cloning ${shown}`);
  // What the clone downloads lands in o.dir: watched, so a huge repository stops at the limit.
  const watched = <T>(task: (signal: AbortSignal) => Promise<T>) =>
    withDiskLimit(
      {
        dir: o.dir,
        limitBytes: o.limits.sourceBytes,
        signal: o.signal,
        exceeded: () => tooLarge(o),
        intervalMs: 250,
      },
      task,
    );
  const clone = await watched((signal) =>
    run("git", [...SAFE, "clone", "--no-checkout", "--quiet", "--", o.url, o.dir], {
      cwd: dirname(o.dir),
      env: o.env,
      signal,
      onLine: log,
    }),
  );
  if (clone.code !== 0) throw new SourceError(`could not clone ${shown}`);

  let target: string | undefined;
  if (o.commitSha !== undefined) {
    target = await resolveCommit(o.commitSha, o);
    if (target === undefined) {
      // A commit no longer on any branch may still be fetchable by id.
      const sha = o.commitSha;
      await watched((signal) =>
        run("git", [...SAFE, "fetch", "--quiet", "origin", sha], {
          cwd: o.dir,
          env: o.env,
          signal,
          onLine: log,
        }),
      );
      target = await resolveCommit(o.commitSha, o);
    }
    if (target === undefined) throw new SourceError(`commit ${o.commitSha} was not found in ${shown}`);
  } else {
    const candidates = o.ref.startsWith("refs/tags/")
      ? [o.ref]
      : o.ref.startsWith("refs/heads/")
        ? [`refs/remotes/origin/${o.ref.slice("refs/heads/".length)}`]
        : [`refs/remotes/origin/${o.ref}`, `refs/tags/${o.ref}`];
    for (const candidate of candidates) {
      target ??= await resolveCommit(candidate, o);
    }
    if (target === undefined) throw new SourceError(`ref "${o.ref}" was not found in ${shown}`);
  }

  await checkTree(target, o);
  const checkout = await run("git", [...SAFE, "checkout", "--quiet", "--detach", target], {
    cwd: o.dir,
    env: o.env,
    signal: o.signal,
    onLine: log,
  });
  if (checkout.code !== 0) throw new SourceError(`could not check out ${target}`);
  const head = await git(["rev-parse", "HEAD"], o.dir, o.env, o.signal);
  if (!head.ok) throw new SourceError("could not read the checked-out commit");
  log(`Checked out ${o.commitSha === undefined ? `${o.ref} at ` : ""}${head.stdout}`);
  return head.stdout;
}

async function resolveCommit(rev: string, o: GitCheckout): Promise<string | undefined> {
  const res = await git(["rev-parse", "--verify", "--quiet", `${rev}^{commit}`], o.dir, o.env, o.signal);
  if (o.signal.aborted) throw abortError(o.signal);
  return res.ok && /^[0-9a-f]{40,64}$/.test(res.stdout) ? res.stdout : undefined;
}

/**
 * Refuses a commit whose tree, with the clone beside it, would pass the limits once checked out:
 * the sizes and count come from `git ls-tree`, so nothing is written before the answer.
 */
async function checkTree(target: string, o: GitCheckout): Promise<void> {
  const listing = new AbortController();
  const forward = () => listing.abort(o.signal.reason);
  if (o.signal.aborted) forward();
  else o.signal.addEventListener("abort", forward, { once: true });
  let files = 0;
  let bytes = await diskUsage(o.dir);
  const refuse = (err: Error) => {
    if (!listing.signal.aborted) listing.abort(err);
  };
  try {
    const listed = await run("git", ["ls-tree", "-r", "-l", "--full-tree", target], {
      cwd: o.dir,
      env: o.env,
      signal: listing.signal,
      onLine: (line) => {
        // "<mode> <type> <object> <size or ->\t<path>"
        const size = /^\d+ \w+ [0-9a-f]+ +(-|\d+)\t/.exec(line)?.[1];
        if (size === undefined) return;
        files++;
        if (size !== "-") bytes += Number(size);
        if (files > o.limits.sourceMaxFiles) refuse(tooManyFiles(WHAT, o.limits.sourceMaxFiles));
        else if (bytes > o.limits.sourceBytes) refuse(tooLarge(o));
      },
    });
    if (listed.code !== 0) throw new SourceError(`could not list the files of ${target}`);
  } finally {
    o.signal.removeEventListener("abort", forward);
  }
}
