import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { BuildStep, DependencyCache } from "./plan/types.ts";

/**
 * A deployment's dependency cache: the directories a build's install filled (node_modules, .venv),
 * kept in one entry per deployment (`apps/<deployment>/cache/`, dropped with it) and keyed by the
 * bytes of the plan's key files, its language and the steps it skips. A later build with the same
 * key copies them into its tree instead of running those steps.
 */

/** Steps a reused entry stands for: the install, and the venv's making before it (it runs ensurepip). */
const SKIPPED_LABELS = new Set(["install", "toolchain"]);

export const DEFAULT_BUILD_CACHE_BYTES = 2048 * 1024 * 1024;

export interface CacheEntryMeta {
  key: string;
  dirs: string[];
}

/** What the plan's cache covers in this build: its key, and the steps a hit skips and keeps. */
export interface CachePlan {
  cache: DependencyCache;
  key: string;
  skipped: BuildStep[];
  /** The build's steps left to run on a hit. */
  rest: BuildStep[];
}

export async function planCache(
  appDir: string,
  language: string,
  steps: BuildStep[],
  cache: DependencyCache,
): Promise<CachePlan> {
  const skipped = steps.filter((s) => SKIPPED_LABELS.has(s.label));
  const rest = steps.filter((s) => !SKIPPED_LABELS.has(s.label));
  return { cache, key: await cacheKey(appDir, language, skipped, cache), skipped, rest };
}

/** sha256 of the language, the skipped commands and each key file's name and bytes (absent: marked). */
async function cacheKey(
  appDir: string,
  language: string,
  skipped: BuildStep[],
  cache: DependencyCache,
): Promise<string> {
  const hash = createHash("sha256");
  hash.update(`${language}\0`);
  for (const step of skipped) hash.update(`${step.label}\0${step.command}\0`);
  for (const dirName of cache.dirs) hash.update(`dir\0${dirName}\0`);
  for (const file of cache.keyFiles) {
    hash.update(`file\0${file}\0`);
    try {
      const bytes = await readFile(join(appDir, file));
      hash.update(`${bytes.length}\0`);
      hash.update(bytes);
    } catch {
      hash.update("absent\0");
    }
  }
  return hash.digest("hex");
}

export async function readEntryMeta(entryDir: string): Promise<CacheEntryMeta | undefined> {
  try {
    const meta: unknown = JSON.parse(await readFile(join(entryDir, "meta.json"), "utf8"));
    if (typeof meta !== "object" || meta === null) return undefined;
    const { key, dirs } = meta as Record<string, unknown>;
    if (typeof key !== "string" || !Array.isArray(dirs) || !dirs.every((d) => typeof d === "string"))
      return undefined;
    return { key, dirs };
  } catch {
    return undefined;
  }
}

function exec(file: string, args: string[], signal: AbortSignal | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 600_000, maxBuffer: 1024 * 1024, signal }, (err, stdout, stderr) => {
      if (err === null) resolve(stdout);
      else reject(new Error(`${file} ${args[0] ?? ""}: ${String(stderr).trim() || err.message}`));
    });
  });
}

/**
 * Copies `from` to `to` keeping owners, modes and links: copy-on-write where the filesystem has it,
 * else a plain copy. Never hard links: a build step (or an unsandboxed app) writing a file in place
 * would change the entry, and every later build would get the change.
 */
export function copyTree(from: string, to: string, signal?: AbortSignal): Promise<string> {
  return exec("cp", ["--reflink=auto", "-a", "--", from, to], signal);
}

/** Bytes the tree takes on disk (du's count, links not followed). */
export async function treeBytes(dir: string, signal?: AbortSignal): Promise<number> {
  const out = await exec("du", ["-s", "-B1", "--", dir], signal);
  return Number.parseInt(out, 10) || 0;
}

/** Puts the entry's directories into `appDir` (replacing any the source brought). */
export async function restoreEntry(
  entryDir: string,
  appDir: string,
  dirs: string[],
  signal?: AbortSignal,
): Promise<void> {
  for (const dirName of dirs) {
    await rm(join(appDir, dirName), { recursive: true, force: true });
    await copyTree(join(entryDir, "dirs", dirName), join(appDir, dirName), signal);
  }
}

/**
 * Saves `appDir`'s `dirs` as the deployment's entry under `cacheDir`, replacing the older one.
 * Returns the bytes kept, or why nothing was: larger than `capBytes`, or a directory missing.
 */
export async function saveEntry(
  cacheDir: string,
  appDir: string,
  meta: CacheEntryMeta,
  capBytes: number,
  signal?: AbortSignal,
): Promise<{ kept: true; bytes: number } | { kept: false; why: string }> {
  const entryDir = join(cacheDir, "entry");
  const temp = join(cacheDir, "entry.new");
  await rm(temp, { recursive: true, force: true });
  let bytes = 0;
  for (const dirName of meta.dirs) {
    try {
      bytes += await treeBytes(join(appDir, dirName), signal);
    } catch {
      return { kept: false, why: `the build left no ${dirName}` };
    }
  }
  if (bytes > capBytes) {
    // The older entry is dropped too: it no longer matches this deployment's dependencies.
    await rm(entryDir, { recursive: true, force: true });
    const size = (bytes / 2 ** 20).toFixed(1);
    return { kept: false, why: `${size} MB is over SLIPWAY_BUILD_CACHE_MB (${capBytes / 2 ** 20})` };
  }
  await mkdir(join(temp, "dirs"), { recursive: true, mode: 0o700 });
  try {
    for (const dirName of meta.dirs) {
      const target = join(temp, "dirs", dirName);
      await mkdir(join(target, ".."), { recursive: true });
      await copyTree(join(appDir, dirName), target, signal);
    }
    await writeFile(join(temp, "meta.json"), JSON.stringify(meta));
    await rm(entryDir, { recursive: true, force: true });
    await rename(temp, entryDir);
  } catch (err) {
    await rm(temp, { recursive: true, force: true });
    throw err;
  }
  return { kept: true, bytes };
}
