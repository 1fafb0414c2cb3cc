import { execFile } from "node:child_process";
import { chmod, chown, lchown, mkdir, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxMode, UidRange } from "../../config.ts";
import { BuildError, type RevisionSpec } from "../interface.ts";
import { baseEnv } from "./env.ts";
import type { Layout } from "./layout.ts";
import {
  bwrapArgs,
  type Confinement,
  chooseSandbox,
  identityFiles,
  runsAsRoot,
  SANDBOX_APP_DIR,
  SANDBOX_HOME,
  type SandboxChoice,
  type Wrap,
} from "./sandbox.ts";
import { UidAllocator } from "./uids.ts";

/** Said to tenants whose revision cannot run here; names no host detail. */
export const NO_SANDBOX_REFUSAL =
  "this machine runs apps without a sandbox, so only the install's first organization may deploy; " +
  "the operator must install bubblewrap (Debian: apt-get install bubblewrap) and start Slipway " +
  "with SLIPWAY_SANDBOX=auto or bwrap (README: Sandbox)";

/** In every build and deploy log of the first organization's apps when there is no sandbox. */
export const UNSANDBOXED_WARNING =
  "slipway: warning: no sandbox is in use on this machine; this app runs unsandboxed, as Slipway's " +
  "own user and with access to its files (README: Sandbox)";

/** How one deployment's commands are started: confined (or not) and with which base environment. */
export interface Confined {
  wrap: Wrap;
  /** PATH, HOME, npm cache … as the command sees them. */
  env: Record<string, string>;
  sandboxed: boolean;
}

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
async function chownFreshTree(dir: string, uid: number, gid: number): Promise<void> {
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

function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  return new Promise((resolve, reject) => {
    // -h: a link is chowned itself, never what it points to (it may point anywhere on the host).
    execFile("chown", ["-hR", `${uid}:${gid}`, dir], { timeout: 600_000 }, (err, _o, stderr) => {
      if (err === null) resolve();
      else reject(new BuildError(`could not hand the files to the app's user: ${String(stderr).trim()}`));
    });
  });
}

/**
 * The local runtime's side of the sandbox: decides once whether there is one, gives each
 * deployment its HOME, its uid (as root) and its /etc/passwd, and wraps its commands.
 */
export class Confiner {
  private choice: Promise<SandboxChoice> | undefined;
  private readonly uids: UidAllocator;

  constructor(
    private readonly layout: Layout,
    private readonly mode: SandboxMode,
    private readonly range: UidRange,
  ) {
    this.uids = new UidAllocator(layout, range);
  }

  /** The sandbox in use, probed on first call; throws when SLIPWAY_SANDBOX=bwrap cannot work. */
  choose(): Promise<SandboxChoice> {
    this.choice ??= chooseSandbox(
      this.mode,
      runsAsRoot() ? { uid: this.range.first, gid: this.range.first } : undefined,
    );
    return this.choice;
  }

  /** Why this revision may not run here (another organization's code, no sandbox), if so. */
  async refusal(spec: RevisionSpec): Promise<string | undefined> {
    if (spec.trusted || spec.source.kind === "image") return undefined;
    return (await this.choose()).system === undefined ? NO_SANDBOX_REFUSAL : undefined;
  }

  /**
   * How commands of `deploymentId` run in `appDir` (writable while building). As root, building
   * hands the tree and HOME to the deployment's uid first.
   */
  async confine(deploymentId: string, appDir: string, writable: boolean): Promise<Confined> {
    const { system } = await this.choose();
    const home = this.layout.deploymentHome(deploymentId);
    await mkdir(home, { recursive: true });
    if (system === undefined) {
      return {
        sandboxed: false,
        env: baseEnv(home),
        wrap: ([file = "sh", ...args]) => ({ file, args, cwd: appDir }),
      };
    }
    const identity = runsAsRoot() ? await this.identity(deploymentId) : undefined;
    const ids = identity ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const etc = this.layout.etcDir(deploymentId);
    await mkdir(etc, { recursive: true });
    const files = identityFiles(ids.uid, ids.gid);
    await writeFile(join(etc, "passwd"), files.passwd, { mode: 0o644 });
    await writeFile(join(etc, "group"), files.group, { mode: 0o644 });
    if (identity !== undefined) {
      // Only the deployment's uid may enter them, even if another uid found the way on the host.
      if (writable) {
        await chownFreshTree(appDir, identity.uid, identity.gid);
        await chmod(appDir, 0o700);
        // HOME is written only by the deployment's own processes once it is theirs; the app may be
        // running and changing it now, so only `chown -hR` (which never follows a link) walks it,
        // and only when it is not theirs yet (made just now, or the deployment's uid changed).
        const owner = await stat(home);
        if (owner.uid !== identity.uid || owner.gid !== identity.gid) {
          await chownTree(home, identity.uid, identity.gid);
        }
      } else {
        await chown(home, identity.uid, identity.gid);
      }
      await chmod(home, 0o700);
    }
    const c: Confinement = {
      appDir,
      writable,
      homeDir: home,
      passwd: join(etc, "passwd"),
      group: join(etc, "group"),
      identity,
    };
    return {
      sandboxed: true,
      env: baseEnv(SANDBOX_HOME, system.path),
      wrap: (argv) => ({ file: "bwrap", args: bwrapArgs(system, c, argv), cwd: "/" }),
    };
  }

  /** The deployment's uid as the host sees it; undefined unless Slipway is root with a sandbox. */
  async uidOf(deploymentId: string): Promise<number | undefined> {
    if (!runsAsRoot() || (await this.choose()).system === undefined) return undefined;
    return this.uids.uidFor(deploymentId);
  }

  /** Gives the deployment's uid back (teardown, after its processes and files are gone). */
  release(deploymentId: string): Promise<void> {
    return this.uids.release(deploymentId);
  }

  private async identity(deploymentId: string): Promise<{ uid: number; gid: number }> {
    const uid = await this.uids.uidFor(deploymentId);
    return { uid, gid: uid };
  }

  /**
   * Log lines shown to tenants name paths as the app sees them, never the host's: the revision's
   * tree is /app, the deployment's HOME /home/app, anything else in the data dir `<data dir>`.
   */
  hidePaths(deploymentId: string, revisionId: string): (line: string) => string {
    const swaps: [string, string][] = [
      [this.layout.appDir(deploymentId, revisionId), SANDBOX_APP_DIR],
      [this.layout.deploymentHome(deploymentId), SANDBOX_HOME],
      [this.layout.dataDir, "<data dir>"],
    ];
    return (line) => {
      let out = line;
      for (const [host, shown] of swaps) if (out.includes(host)) out = out.split(host).join(shown);
      return out;
    };
  }
}
