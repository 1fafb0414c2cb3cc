import { readdir, readFile } from "node:fs/promises";

/**
 * Cpu use of process groups from /proc, what queue workers are scaled on. A replica's process
 * group holds everything it started (sandbox included, as in memory.ts), so its cpu time is the
 * sum over the group's processes of their own time and that of their children already waited
 * for: it only grows while the group lives.
 */

/** Linux's USER_HZ, the unit of the times in /proc/<pid>/stat, on every architecture Slipway runs on. */
const TICKS_PER_S = 100;

/**
 * Cpu seconds (user + system, children waited for included) of each process group in `pgids`;
 * groups with no process left are missing. One walk of /proc for all of them.
 */
export async function groupCpuSeconds(pgids: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (pgids.length === 0) return out;
  const wanted = new Set(pgids);
  let entries: string[];
  try {
    entries = await readdir("/proc");
  } catch {
    return out;
  }
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e))
      .map(async (pid) => {
        const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
        // Fields after the command name (which may hold spaces and parentheses): state is the first.
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        const pgid = Number(f[2]);
        if (!wanted.has(pgid)) return;
        // utime stime cutime cstime: fields 14–17 of stat(5), 11–14 here.
        const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + (Number(f[i]) || 0), 0);
        out.set(pgid, (out.get(pgid) ?? 0) + ticks / TICKS_PER_S);
      }),
  );
  return out;
}

/** One process to measure: its process group, and what counts as 100% (its cpu limit, else a core). */
export interface Measured {
  pgid: number;
  cpus: number;
}

/**
 * The cpu use of a changing set of process groups between two reads: each read returns the sum over
 * the groups of (cpu seconds / wall seconds / the group's cpus) since the previous read. A group
 * seen for the first time (a new or restarted process) counts from the next read on.
 */
export class CpuMeter {
  private last = new Map<number, { at: number; seconds: number }>();

  constructor(
    private readonly read: (pgids: readonly number[]) => Promise<Map<number, number>> = groupCpuSeconds,
  ) {}

  async sample(groups: readonly Measured[], at: number): Promise<number> {
    const seconds = await this.read(groups.map((g) => g.pgid));
    const next = new Map<number, { at: number; seconds: number }>();
    let total = 0;
    for (const { pgid, cpus } of groups) {
      const now = seconds.get(pgid);
      if (now === undefined) continue;
      next.set(pgid, { at, seconds: now });
      const before = this.last.get(pgid);
      const wallS = before === undefined ? 0 : (at - before.at) / 1000;
      if (before === undefined || wallS <= 0 || now < before.seconds) continue;
      total += (now - before.seconds) / wallS / cpus;
    }
    this.last = next;
    return total;
  }
}
