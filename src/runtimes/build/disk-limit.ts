import type { Dirent } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Bytes a directory tree takes: per file the larger of its size and its allocated blocks (a sparse
 * file is counted at its size: copying or filling it makes it real), hard links once. The walk
 * stops as soon as the count passes `stopAbove`, so watching a runaway tree stays cheap. Entries
 * that vanish while it walks (a build deleting files) are skipped.
 */
export async function diskUsage(dir: string, stopAbove = Number.POSITIVE_INFINITY): Promise<number> {
  let total = 0;
  const seen = new Set<string>();
  const pending = [dir];
  const add = async (path: string) => {
    try {
      const st = await lstat(path);
      if (st.nlink > 1 && !st.isDirectory()) {
        const key = `${st.dev}:${st.ino}`;
        if (seen.has(key)) return;
        seen.add(key);
      }
      total += Math.max(st.size, st.blocks * 512);
    } catch {
      // Gone since readdir listed it.
    }
  };
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    await add(next);
    let entries: Dirent[];
    try {
      entries = await readdir(next, { withFileTypes: true });
    } catch {
      continue;
    }
    const files: string[] = [];
    for (const entry of entries) {
      const path = join(next, entry.name);
      if (entry.isDirectory()) pending.push(path);
      else files.push(path);
    }
    // In slices: a directory of 100k files must not open 100k lstat calls at once.
    for (let i = 0; i < files.length && total <= stopAbove; i += 64) {
      await Promise.all(files.slice(i, i + 64).map(add));
    }
    if (total > stopAbove) return total;
  }
  return total;
}

export interface DiskLimit {
  dir: string;
  limitBytes: number;
  /** The caller's signal: aborting it aborts the task as before. */
  signal: AbortSignal;
  /** The error the task fails with once `dir` is over the limit. */
  exceeded: () => Error;
  log?: (line: string) => void;
  /** Time between two looks at the directory (default 1 s; longer while walks are slow). */
  intervalMs?: number;
}

/**
 * Runs `task` with a signal that is also aborted, with `exceeded()` as its reason, once `dir` grows
 * past the limit; `run()` then kills the process group and the task fails with that error. The
 * directory is looked at every interval and once more after the task, so a burst between two looks
 * still fails it.
 */
export async function withDiskLimit<T>(
  limit: DiskLimit,
  task: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const child = new AbortController();
  const forward = () => child.abort(limit.signal.reason);
  if (limit.signal.aborted) forward();
  else limit.signal.addEventListener("abort", forward, { once: true });
  let over: Error | undefined;
  const isOver = async () => (await diskUsage(limit.dir, limit.limitBytes)) > limit.limitBytes;
  const trip = () => {
    if (over !== undefined) return;
    over = limit.exceeded();
    limit.log?.(`error: ${over.message}`);
    child.abort(over);
  };
  const stop = new AbortController();
  const interval = limit.intervalMs ?? 1000;
  const watching = (async () => {
    let wait = interval;
    for (;;) {
      try {
        await sleep(wait, undefined, { signal: stop.signal });
      } catch {
        return;
      }
      const started = Date.now();
      const exceeded = await isOver();
      if (stop.signal.aborted) return;
      if (exceeded) return trip();
      // Walking a big tree costs: spend at most about a third of the time doing it.
      wait = Math.max(interval, 2 * (Date.now() - started));
    }
  })();
  try {
    const result = await task(child.signal);
    if (over === undefined && !limit.signal.aborted && (await isOver())) trip();
    if (over !== undefined) throw over;
    return result;
  } catch (err) {
    if (over !== undefined && !limit.signal.aborted) throw over;
    throw err;
  } finally {
    stop.abort();
    limit.signal.removeEventListener("abort", forward);
    await watching;
  }
}
