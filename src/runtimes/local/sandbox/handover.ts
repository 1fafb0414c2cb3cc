import { execFile } from "node:child_process";
import { lchown, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { BuildError } from "../../interface.ts";

// Handing a deployment's files to its uid (as root, before a build): the tree and HOME become
// the app's own, and no link is ever followed.

/** Up to this many entries, a fresh tree is handed over in-process (no `chown` child to spawn). */
const SMALL_TREE = 2000;

/**
 * The paths of `dir`'s tree (itself first), or undefined when it has more than `max` entries.
 * Directories are entered by their entry type, never through a link.
 */
async function smallTree(dir: string, max: number): Promise<string[] | undefined> {
  const paths = [dir];
  const directories = [dir];
  for (let next = directories.pop(); next !== undefined; next = directories.pop()) {
    for (const entry of await readdir(next, { withFileTypes: true })) {
      const child = join(next, entry.name);
      paths.push(child);
      if (entry.isDirectory()) directories.push(child);
      if (paths.length > max) return undefined;
    }
  }
  return paths;
}

/**
 * Hands a tree that only Slipway has written (a revision's fresh source: no other process can
 * change it meanwhile) to uid:gid. A small one — the usual source before its install — in this
 * process: spawning `chown` costs tens of ms of each deploy; a large one through `chown -hR`.
 */
export async function chownFreshTree(dir: string, uid: number, gid: number): Promise<void> {
  // Already handed over once: the app's processes may be writing in it, so `chown -hR` walks it.
  if ((await stat(dir)).uid === uid) return chownTree(dir, uid, gid);
  const paths = await smallTree(dir, SMALL_TREE);
  if (paths === undefined) return chownTree(dir, uid, gid);
  try {
    // lchown: a link is changed itself, never what it points to.
    for (let i = 0; i < paths.length; i += 64) {
      await Promise.all(paths.slice(i, i + 64).map((p) => lchown(p, uid, gid)));
    }
  } catch (err) {
    throw new BuildError(`could not hand the files to the app's user: ${(err as Error).message}`);
  }
}

export function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  return new Promise((resolve, reject) => {
    // -h: a link is chowned itself, never what it points to (it may point anywhere on the host).
    execFile("chown", ["-hR", `${uid}:${gid}`, dir], { timeout: 600_000 }, (err, _o, stderr) => {
      if (err === null) resolve();
      else reject(new BuildError(`could not hand the files to the app's user: ${String(stderr).trim()}`));
    });
  });
}
