import { realpath, stat } from "node:fs/promises";
import { resolve, sep } from "node:path";

/** Whether `child` is `parent` or inside it (both absolute, normalized paths). */
export function isWithin(parent: string, child: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

export type AllowedDir = { ok: true; path: string } | { ok: false; reason: string };

const OUTSIDE = "Not under a directory allowed by SLIPWAY_LOCAL_GIT_ROOTS.";

async function underARoot(path: string, roots: string[]): Promise<boolean> {
  for (const root of roots) {
    const realRoot = await realpath(root).catch(() => undefined);
    if (realRoot !== undefined && isWithin(realRoot, path)) return true;
  }
  return false;
}

/**
 * The real path of `path` (symlinks and `..` resolved) when it is a directory under one of the
 * allowed roots; a reason otherwise. A path outside the roots gets the same answer whether or not
 * it exists, so the check cannot be used to probe the server's file system.
 */
export async function resolveAllowedDir(path: string, roots: string[]): Promise<AllowedDir> {
  if (roots.length === 0) {
    return { ok: false, reason: "local_git integrations are disabled: SLIPWAY_LOCAL_GIT_ROOTS is empty." };
  }
  if (!path.startsWith("/")) return { ok: false, reason: "Must be an absolute path." };
  const real = await realpath(path).catch(() => undefined);
  if (real === undefined) {
    return { ok: false, reason: (await underARoot(resolve(path), roots)) ? "No such directory." : OUTSIDE };
  }
  if (!(await underARoot(real, roots))) return { ok: false, reason: OUTSIDE };
  if (!(await stat(real)).isDirectory()) return { ok: false, reason: "Not a directory." };
  return { ok: true, path: real };
}
