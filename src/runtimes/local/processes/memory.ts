import { readdir, readFile } from "node:fs/promises";

/** Linux's page size on every architecture Slipway runs on (x86-64, arm64 with 4 KiB pages). */
const PAGE = 4096;

/**
 * Resident memory of every process in process group `pgid` (what a replica started, sandbox
 * included), in bytes, from /proc; undefined when the group has no process left or /proc is
 * unreadable. Shared pages are counted once per process, as `ps` does.
 */
export async function groupRssBytes(pgid: number): Promise<number | undefined> {
  let entries: string[];
  try {
    entries = await readdir("/proc");
  } catch {
    return undefined;
  }
  let pages = 0;
  let found = false;
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e))
      .map(async (pid) => {
        const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
        // Fields after the command name (which may hold spaces and parentheses): state is the first.
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (Number(fields[2]) !== pgid) return;
        found = true;
        pages += Number(fields[21]) || 0;
      }),
  );
  return found ? pages * PAGE : undefined;
}
