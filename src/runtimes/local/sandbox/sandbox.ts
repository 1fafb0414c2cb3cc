import { execFile } from "node:child_process";
import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { SandboxMode } from "../../../config.ts";

/**
 * Every build command and app process runs in a bubblewrap sandbox (docs/sandbox.md): its own
 * mount, PID, IPC and UTS namespaces; the system read-only; its revision at /app and its
 * deployment's HOME at /home/app; nothing else of the host. Its network namespace is the deployment's
 * own (network/, joined by nsenter before bwrap starts), with a seccomp filter and a pids limit.
 */

/** Where a sandboxed command sees its revision's source tree, and its deployment's HOME. */
export const SANDBOX_APP_DIR = "/app";
export const SANDBOX_HOME = "/home/app";
const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin";

/** Top-level system directories: bound read-only, or recreated as the same symlink (merged /usr). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/** What programs need of /etc: name resolution, TLS roots, time zone, library cache. Nothing secret. */
const ETC_ENTRIES = [
  "resolv.conf",
  "hosts",
  "host.conf",
  "nsswitch.conf",
  "gai.conf",
  "services",
  "protocols",
  "localtime",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "ssl/certs",
  "ssl/openssl.cnf",
  "ca-certificates",
  "ca-certificates.conf",
  "alternatives",
];

/** What of this machine a sandbox shows, read once from its file system. */
export interface HostSystem {
  /** Paths bound read-only at the same place. */
  readOnly: string[];
  /** Symlinks recreated as they are on the host (`/bin` → `usr/bin`). */
  links: { path: string; target: string }[];
  /** PATH inside the sandbox. */
  path: string;
}

export function hostSystem(): HostSystem {
  const readOnly: string[] = [];
  const links: { path: string; target: string }[] = [];
  for (const dir of SYSTEM_DIRS) {
    try {
      const st = lstatSync(dir);
      if (st.isSymbolicLink()) links.push({ path: dir, target: readlinkSync(dir) });
      else if (st.isDirectory()) readOnly.push(dir);
    } catch {
      // Not on this machine (lib32 and friends).
    }
  }
  for (const entry of ETC_ENTRIES) if (existsSync(`/etc/${entry}`)) readOnly.push(`/etc/${entry}`);
  let path = SYSTEM_PATH;
  // Node installed outside the system dirs (nvm, /opt): its own install is shown too, nothing more.
  const node = realpathSync(process.execPath);
  if (!SYSTEM_DIRS.some((d) => node.startsWith(`${d}/`))) {
    const bin = dirname(node);
    const prefix = dirname(bin);
    readOnly.push(existsSync(join(prefix, "lib", "node_modules", "npm")) ? prefix : bin);
    path = `${bin}:${SYSTEM_PATH}`;
  }
  return { readOnly, links, path };
}

/** What one sandboxed command may see and be. */
export interface Confinement {
  /** Host directory shown at /app: read-write while building, read-only while running. */
  appDir: string;
  writable: boolean;
  /** Host directory shown (read-write) at /home/app: the deployment's own HOME and npm cache. */
  homeDir: string;
  /** Host files shown as /etc/passwd and /etc/group (they name only the sandbox's own user). */
  passwd: string;
  group: string;
  /**
   * The deployment's own uid/gid, when Slipway runs as root. Unset: bubblewrap's user namespace
   * runs the command as Slipway's own (unprivileged) user.
   */
  identity?: { uid: number; gid: number };
}

/** Every parent of `path` (not `/`), outermost first. */
function parentsOf(path: string): string[] {
  const out: string[] = [];
  for (let p = dirname(path); p !== "/" && p !== "."; p = dirname(p)) out.unshift(p);
  return out;
}

/** The arguments of `bwrap` that run `command` confined as `c` says. */
export function bwrapArgs(system: HostSystem, c: Confinement, command: string[]): string[] {
  const a: string[] = [];
  // As root, no user namespace: setpriv below switches to the deployment's real host uid, so
  // the kernel itself keeps deployments apart. Otherwise the user namespace does the confining.
  if (c.identity) a.push("--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try");
  else a.push("--unshare-all", "--share-net");
  a.push("--hostname", "app");
  // Parents bwrap would create are root-only (0700); made readable first, outermost first.
  const targets = [...system.readOnly, ...system.links.map((l) => l.path), "/etc/passwd", SANDBOX_HOME];
  const made = new Set<string>();
  for (const t of targets) {
    for (const parent of parentsOf(t)) {
      if (made.has(parent)) continue;
      made.add(parent);
      a.push("--perms", "0755", "--dir", parent);
    }
  }
  for (const dir of system.readOnly) a.push("--ro-bind", dir, dir);
  for (const link of system.links) a.push("--symlink", link.target, link.path);
  a.push("--ro-bind", c.passwd, "/etc/passwd", "--ro-bind", c.group, "/etc/group");
  a.push("--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp");
  a.push(c.writable ? "--bind" : "--ro-bind", c.appDir, SANDBOX_APP_DIR);
  a.push("--bind", c.homeDir, SANDBOX_HOME, "--chdir", SANDBOX_APP_DIR);
  if (c.identity === undefined) return [...a, "--", ...command];
  const { uid, gid } = c.identity;
  // bwrap keeps only what setpriv needs to switch; setpriv then drops every capability for good.
  return [
    ...a,
    "--cap-add",
    "CAP_SETUID",
    "--cap-add",
    "CAP_SETGID",
    "--",
    "setpriv",
    `--reuid=${uid}`,
    `--regid=${gid}`,
    "--clear-groups",
    "--inh-caps=-all",
    "--bounding-set=-all",
    "--no-new-privs",
    "--",
    ...command,
  ];
}

/** /etc/passwd and /etc/group of a sandbox: its own user `app` (HOME /home/app), root and nobody. */
export function identityFiles(uid: number, gid: number): { passwd: string; group: string } {
  return {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\napp:x:${uid}:${gid}:app:${SANDBOX_HOME}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\napp:x:${gid}:\nnogroup:x:65534:\n`,
  };
}

export function runsAsRoot(): boolean {
  return process.getuid?.() === 0;
}

function bwrapWorks(bwrap: string, args: string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(bwrap, args, { timeout: 10_000, env: { PATH: SYSTEM_PATH } }, (err, _out, stderr) => {
      if (err === null) return resolve(undefined);
      const detail = String(stderr).trim() || err.message;
      resolve(detail.split("\n")[0]);
    });
  });
}

/**
 * Whether bwrap runs a command here the way it will for apps; the reason when it does not.
 * `bwrap` names the program (tests name one that is missing).
 */
export async function probeBwrap(
  system: HostSystem,
  identity?: { uid: number; gid: number },
  bwrap = "bwrap",
): Promise<string | undefined> {
  const dir = await mkdtemp(join(tmpdir(), "slipway-sandbox-probe-"));
  try {
    const ids = identity ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    const files = identityFiles(ids.uid, ids.gid);
    await writeFile(join(dir, "passwd"), files.passwd, { mode: 0o644 });
    await writeFile(join(dir, "group"), files.group, { mode: 0o644 });
    const c: Confinement = {
      appDir: dir,
      writable: false,
      homeDir: dir,
      passwd: join(dir, "passwd"),
      group: join(dir, "group"),
      identity,
    };
    return await bwrapWorks(bwrap, bwrapArgs(system, c, ["true"]));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The sandbox this runtime uses, decided once from SLIPWAY_SANDBOX and a probe of bwrap. */
export interface SandboxChoice {
  /** The host's system as shown in sandboxes; undefined: commands run unsandboxed. */
  system: HostSystem | undefined;
  /** Why there is no sandbox (for the start-up warning). */
  reason?: string;
}

export async function chooseSandbox(
  mode: SandboxMode,
  probeIdentity: { uid: number; gid: number } | undefined,
  bwrap = "bwrap",
): Promise<SandboxChoice> {
  if (mode === "none") return { system: undefined, reason: "SLIPWAY_SANDBOX=none" };
  const system = hostSystem();
  const failure = await probeBwrap(system, probeIdentity, bwrap);
  if (failure === undefined) return { system };
  if (mode === "bwrap") {
    throw new Error(
      `SLIPWAY_SANDBOX=bwrap, but bubblewrap does not work here (${failure}); install it (Debian: apt-get install bubblewrap) or set SLIPWAY_SANDBOX=auto.`,
    );
  }
  return { system: undefined, reason: `bubblewrap is not usable here (${failure})` };
}
