import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  DEFAULT_BUILD_CACHE_BYTES,
  planCache,
  readEntryMeta,
  restoreEntry,
  saveEntry,
} from "../build/cache.ts";
import type { BuildStep, DependencyCache } from "../build/plan/types.ts";
import type { Layout } from "../shared/layout.ts";
import type { Confiner } from "./sandbox/confine.ts";
import { chownTree } from "./sandbox/handover.ts";

/**
 * The local runtime's side of the dependency cache (../build/cache.ts): the entry lives in the
 * deployment's directory (`apps/<deployment>/cache/`, root's, never shown in the sandbox), so no
 * other deployment or workspace ever reads it and teardown drops it with the deployment.
 */

export function cacheDir(layout: Layout, deploymentId: string): string {
  return join(layout.deploymentDir(deploymentId), "cache");
}

export interface CacheUse {
  /** The steps to run: all of them, or without the install a reused entry stands for. */
  steps: BuildStep[];
  /** After a successful build: keep its dependencies as the deployment's entry (a miss only). */
  save: () => Promise<void>;
}

export interface CacheInput {
  layout: Layout;
  confiner: Confiner;
  deploymentId: string;
  appDir: string;
  language: string;
  steps: BuildStep[];
  cache: DependencyCache | undefined;
  sandboxed: boolean;
  /** The build's: a cancelled or timed-out build stops copying too. */
  signal?: AbortSignal;
  /** SLIPWAY_BUILD_CACHE_MB in bytes. */
  capBytes: number | undefined;
  log: (line: string) => void;
}

const NOTHING = async () => {};

/** Reuses the deployment's entry when its key matches (after the tree was handed to the app's uid). */
export async function useBuildCache(i: CacheInput): Promise<CacheUse> {
  const all: CacheUse = { steps: i.steps, save: NOTHING };
  if (i.cache === undefined || i.cache.dirs.length === 0) return all;
  const names = i.cache.dirs.join(", ");
  // A venv's scripts name its absolute path: /app/.venv in every sandboxed revision, but a
  // different host path per revision without a sandbox, where a reused venv would run the old one's.
  if (!i.sandboxed && i.cache.dirs.includes(".venv")) {
    i.log(`slipway: not reusing ${names} without a sandbox (its scripts name this revision's own path)`);
    return all;
  }
  const plan = await planCache(i.appDir, i.language, i.steps, i.cache);
  const dir = cacheDir(i.layout, i.deploymentId);
  const entryDir = join(dir, "entry");
  const meta = await readEntryMeta(entryDir);
  const short = plan.key.slice(0, 12);
  const files = i.cache.keyFiles.join(" and ");
  const save = async () => {
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const capBytes = i.capBytes ?? DEFAULT_BUILD_CACHE_BYTES;
      const saved = await saveEntry(
        dir,
        i.appDir,
        { key: plan.key, dirs: i.cache?.dirs ?? [] },
        capBytes,
        i.signal,
      );
      if (saved.kept) i.log(`slipway: kept ${names} for later builds with the same ${files} (key ${short})`);
      else i.log(`slipway: not keeping ${names} for later builds: ${saved.why}`);
    } catch (err) {
      // The build itself succeeded; only the next one will be slower.
      i.log(`slipway: could not keep ${names} for later builds: ${(err as Error).message}`);
    }
  };
  if (meta === undefined || meta.key !== plan.key) {
    if (meta !== undefined)
      i.log(`slipway: not reusing ${names}: ${files} changed since the last kept build`);
    return { steps: i.steps, save };
  }
  try {
    await restoreEntry(entryDir, i.appDir, meta.dirs, i.signal);
    // cp -a kept the owners the entry was saved with; the uid is the deployment's own, handed over again in case.
    const uid = await i.confiner.uidOf(i.deploymentId);
    if (uid !== undefined) for (const d of meta.dirs) await chownTree(join(i.appDir, d), uid, uid);
  } catch (err) {
    for (const d of meta.dirs) await rm(join(i.appDir, d), { recursive: true, force: true });
    i.log(`slipway: could not reuse ${names} (${(err as Error).message}): installing`);
    return { steps: i.steps, save };
  }
  i.log(`slipway: reused ${names} from a build with the same ${files} (key ${short})`);
  return { steps: plan.rest, save: NOTHING };
}
