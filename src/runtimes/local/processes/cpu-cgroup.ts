import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { controllerSupport, type MemoryCgroup, removeCgroup } from "./cgroup.ts";

/**
 * `cpu_limit` through the kernel's cpu controller, where this process may create cgroups below its
 * own: cgroup v1 `cpu.cfs_quota_us` over `cpu.cfs_period_us`, or v2 `cpu.max`. A group limited to
 * 0.5 cpu gets 50 ms of cpu time every 100 ms, across all its processes. Where the controller is
 * not writable, `cpuCgroupSupported()` is false and the field is warned about instead.
 */

const PERIOD_US = 100_000;

export interface CpuCgroup {
  /**
   * `cgroup.procs` a launcher joins; undefined when the limit was written into the replica's
   * memory group (cgroup v2 keeps a process in one group, so both limits share it).
   */
  readonly procsPath: string | undefined;
  remove(): Promise<void>;
}

/** Whether cpu limits can be made here (probed once per process). */
export async function cpuCgroupSupported(): Promise<boolean> {
  return (await controllerSupport("cpu")) !== undefined;
}

/** The quota of `cpus` cpus per period, in microseconds (the kernel's minimum is 1 ms). */
export function cpuQuotaUs(cpus: number): number {
  return Math.max(1000, Math.round(cpus * PERIOD_US));
}

async function writeLimit(path: string, version: 1 | 2, cpus: number): Promise<void> {
  const quota = cpuQuotaUs(cpus);
  if (version === 1) {
    await writeFile(join(path, "cpu.cfs_period_us"), String(PERIOD_US));
    await writeFile(join(path, "cpu.cfs_quota_us"), String(quota));
  } else {
    await writeFile(join(path, "cpu.max"), `${quota} ${PERIOD_US}`);
  }
}

/**
 * A cgroup `slipway-<name>` limited to `cpus` cpus, or undefined where the cpu controller is not
 * writable. With cgroup v2 and the memory group `memory` in the same hierarchy, the limit goes into
 * that group instead.
 */
export async function createCpuCgroup(
  name: string,
  cpus: number,
  memory?: MemoryCgroup,
): Promise<CpuCgroup | undefined> {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$/.test(name))
    throw new Error(`cgroup name "${name}" is not usable`);
  if (!Number.isFinite(cpus) || cpus <= 0) throw new Error("the cpu limit must be a positive number");
  const support = await controllerSupport("cpu");
  if (support === undefined) return undefined;
  const { version, parent } = support;
  if (version === 2 && memory?.version === 2 && dirname(memory.path) === parent) {
    await writeLimit(memory.path, 2, cpus);
    return { procsPath: undefined, remove: async () => {} };
  }
  const path = join(parent, `slipway-${name}`);
  await mkdir(path, { recursive: true });
  await writeLimit(path, version, cpus);
  return { procsPath: join(path, "cgroup.procs"), remove: () => removeCgroup(path, parent) };
}
