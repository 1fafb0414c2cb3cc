import { access, mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Memory limits through the kernel's memory controller, where this process may create cgroups
 * below its own (root, or a delegated cgroup): cgroup v1 `memory.limit_in_bytes`, or v2
 * `memory.max` when the own cgroup's `cgroup.subtree_control` has (or accepts) `+memory`. Unlike
 * RLIMIT_DATA this counts everything a process group really uses (RSS, page cache, shared memory)
 * and the kernel OOM-kills inside the group when it is over. Where none is writable, `support()`
 * is undefined and callers keep the rlimit alone. The cpu (cpu-cgroup.ts) and pids (sandbox/pids-limit.ts)
 * controllers are found the same way.
 */

export interface CgroupSupport {
  version: 1 | 2;
  /** The cgroup this process is in: children are made here. */
  parent: string;
}

export interface MemoryCgroup {
  readonly path: string;
  readonly version: 1 | 2;
  /**
   * `cgroup.procs` of the group. A launcher can join before its command starts, so nothing it
   * allocates escapes: `sh -c 'echo $$ > <procsPath> && exec <command>'`.
   */
  readonly procsPath: string;
  /** Moves a running process (and what it starts from now on) into the group. */
  addPid(pid: number): Promise<void>;
  /** Times the kernel killed a process of the group for being over the limit (when it says). */
  oomKills(): Promise<number | undefined>;
  /** Removes the group; processes still in it are moved back to the parent, not killed. */
  remove(): Promise<void>;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$/;

interface Mount {
  root: string;
  point: string;
  fstype: string;
  superOptions: string[];
}

/** mountinfo writes spaces and the like in paths as \ooo (octal). */
const octalUnescape = (s: string) =>
  s.replace(/\\(\d{3})/g, (_m, o: string) => String.fromCharCode(Number.parseInt(o, 8)));

function mounts(text: string): Mount[] {
  const found: Mount[] = [];
  for (const line of text.split("\n")) {
    const [left, right] = line.split(" - ");
    if (left === undefined || right === undefined) continue;
    const f = left.split(" ");
    const r = right.split(" ");
    const root = f[3];
    const point = f[4];
    const fstype = r[0];
    if (root === undefined || point === undefined || fstype === undefined) continue;
    found.push({
      root: octalUnescape(root),
      point: octalUnescape(point),
      fstype,
      superOptions: (r[2] ?? "").split(","),
    });
  }
  return found;
}

/** Where on disk the cgroup `path` of a hierarchy mounted as `mount` is. */
function onDisk(mount: Mount, path: string): string | undefined {
  if (mount.root === "/") return join(mount.point, path);
  if (path === mount.root || path.startsWith(`${mount.root}/`))
    return join(mount.point, path.slice(mount.root.length));
  return undefined;
}

async function writable(file: string): Promise<boolean> {
  try {
    await access(file, 2);
    return true;
  } catch {
    return false;
  }
}

/** The controllers Slipway limits with, and the file a probe writes to check a child is usable. */
export type Controller = "memory" | "cpu" | "pids";
const PROBE_FILE: Record<Controller, Record<1 | 2, [file: string, value: string]>> = {
  memory: {
    1: ["memory.limit_in_bytes", String(64 * 1024 * 1024)],
    2: ["memory.max", String(64 * 1024 * 1024)],
  },
  cpu: { 1: ["cpu.cfs_quota_us", "50000"], 2: ["cpu.max", "50000 100000"] },
  pids: { 1: ["pids.max", "64"], 2: ["pids.max", "64"] },
};

/** Whether a child made under `parent` gets a working limit file of `controller`: made, written, removed. */
async function probe(parent: string, version: 1 | 2, controller: Controller): Promise<boolean> {
  const dir = join(parent, `slipway-probe-${controller}-${process.pid}`);
  try {
    await mkdir(dir);
  } catch {
    return false;
  }
  try {
    const [file, value] = PROBE_FILE[controller][version];
    await writeFile(join(dir, file), value);
    return true;
  } catch {
    return false;
  } finally {
    await rmdir(dir).catch(() => undefined);
  }
}

async function detect(controller: Controller): Promise<CgroupSupport | undefined> {
  let own: string;
  let info: string;
  try {
    own = await readFile("/proc/self/cgroup", "utf8");
    info = await readFile("/proc/self/mountinfo", "utf8");
  } catch {
    return undefined;
  }
  const all = mounts(info);
  const lines = own
    .split("\n")
    .map((l) => l.split(":"))
    .filter((p) => p.length >= 3);
  // v1 first: on a hybrid host the v2 hierarchy usually has neither controller.
  const v1 = lines.find((p) => (p[1] ?? "").split(",").includes(controller));
  const v1Mount = all.find((m) => m.fstype === "cgroup" && m.superOptions.includes(controller));
  if (v1 !== undefined && v1Mount !== undefined) {
    const parent = onDisk(v1Mount, p3(v1));
    if (parent !== undefined && (await probe(parent, 1, controller))) return { version: 1, parent };
  }
  const v2 = lines.find((p) => p[0] === "0" && p[1] === "");
  for (const m of all.filter((x) => x.fstype === "cgroup2")) {
    if (v2 === undefined) break;
    const parent = onDisk(m, p3(v2));
    if (parent === undefined) continue;
    const controllers = await readFile(join(parent, "cgroup.controllers"), "utf8").catch(() => "");
    if (!controllers.split(/\s+/).includes(controller)) continue;
    const subtree = await readFile(join(parent, "cgroup.subtree_control"), "utf8").catch(() => "");
    if (!subtree.split(/\s+/).includes(controller)) {
      // Refused (EBUSY) when the own cgroup holds processes and is not the root: not delegated.
      const enabled = await writeFile(join(parent, "cgroup.subtree_control"), `+${controller}`).then(
        () => true,
        () => false,
      );
      if (!enabled) continue;
    }
    if (await probe(parent, 2, controller)) return { version: 2, parent };
  }
  return undefined;
}

/** The cgroup path of a /proc/self/cgroup line (it may itself contain ':'). */
function p3(parts: string[]): string {
  return parts.slice(2).join(":");
}

const detected = new Map<Controller, Promise<CgroupSupport | undefined>>();

/** Whether cgroups of `controller` can be made here (looked up once per process). */
export function controllerSupport(controller: Controller): Promise<CgroupSupport | undefined> {
  let found = detected.get(controller);
  if (found === undefined) {
    found = detect(controller);
    detected.set(controller, found);
  }
  return found;
}

/** Whether memory cgroups can be made here (looked up once per process). */
export function cgroupSupport(): Promise<CgroupSupport | undefined> {
  return controllerSupport("memory");
}

/**
 * A new memory cgroup `slipway-<name>` limited to `limitBytes` (swap included where the kernel
 * accounts it), or undefined where memory cgroups are not writable here.
 */
export async function createMemoryCgroup(
  name: string,
  limitBytes: number,
): Promise<MemoryCgroup | undefined> {
  if (!NAME.test(name)) throw new Error(`cgroup name "${name}" must be letters, digits, '.', '_' or '-'`);
  if (!Number.isSafeInteger(limitBytes) || limitBytes <= 0)
    throw new Error("the memory limit must be a positive number of bytes");
  const support = await cgroupSupport();
  if (support === undefined) return undefined;
  const { version, parent } = support;
  const path = join(parent, `slipway-${name}`);
  await mkdir(path, { recursive: true });
  const limit = String(limitBytes);
  if (version === 1) {
    await writeFile(join(path, "memory.limit_in_bytes"), limit);
    // Without it a process could go on in swap; absent when the kernel does not account swap.
    if (await writable(join(path, "memory.memsw.limit_in_bytes"))) {
      await writeFile(join(path, "memory.memsw.limit_in_bytes"), limit).catch(() => undefined);
    }
  } else {
    await writeFile(join(path, "memory.max"), limit);
    await writeFile(join(path, "memory.swap.max"), "0").catch(() => undefined);
  }
  const procsPath = join(path, "cgroup.procs");
  return {
    path,
    version,
    procsPath,
    addPid: (pid) => writeFile(procsPath, String(pid)),
    oomKills: async () => {
      const text = await readFile(
        join(path, version === 1 ? "memory.oom_control" : "memory.events"),
        "utf8",
      ).catch(() => "");
      const count = /^oom_kill (\d+)$/m.exec(text)?.[1];
      return count === undefined ? undefined : Number(count);
    },
    remove: () => removeCgroup(path, parent),
  };
}

/** Moves any process left in the group `path` back to `parent`, then removes the group. */
export async function removeCgroup(path: string, parent: string): Promise<void> {
  const procsPath = join(path, "cgroup.procs");
  for (let attempt = 0; ; attempt++) {
    const pids = (await readFile(procsPath, "utf8").catch(() => "")).split("\n").filter(Boolean);
    for (const pid of pids) await writeFile(join(parent, "cgroup.procs"), pid).catch(() => undefined);
    try {
      await rmdir(path);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return;
      // A process that just exited can stay listed for a moment.
      if (code !== "EBUSY" || attempt >= 20) throw err;
      await sleep(50);
    }
  }
}
