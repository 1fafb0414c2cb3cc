import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { killGroup } from "../../shared/process-group.ts";

/**
 * App processes run in their own process groups, so they outlive a Slipway that is killed with
 * SIGKILL. Each deployment's live groups are recorded in a file; the next runtime ends the ones
 * that are still the same processes (start time checked, so a reused pid is never signalled).
 */

/** Kernel start time of a process (field 22 of /proc/<pid>/stat), or undefined if unknown. */
export function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

interface Entry {
  pid: number;
  start: string;
}

export class ProcessRecord {
  private readonly live = new Map<number, string>();

  constructor(private readonly file: string) {}

  add(pid: number): void {
    const start = startTimeOf(pid);
    if (start === undefined) return;
    this.live.set(pid, start);
    this.save();
  }

  remove(pid: number): void {
    if (this.live.delete(pid)) this.save();
  }

  private save(): void {
    const entries: Entry[] = [...this.live].map(([pid, start]) => ({ pid, start }));
    try {
      if (entries.length === 0) rmSync(this.file, { force: true });
      else writeFileSync(this.file, JSON.stringify(entries));
    } catch {
      // The deployment dir is gone (teardown): nothing left to record.
    }
  }

  /** Ends the groups a previous runtime recorded in `file` and forgets them. */
  static async reap(file: string, graceMs: number): Promise<number> {
    let entries: unknown;
    try {
      entries = JSON.parse(readFileSync(file, "utf8"));
    } catch {
      return 0;
    }
    let reaped = 0;
    if (Array.isArray(entries)) {
      for (const e of entries as Partial<Entry>[]) {
        if (typeof e.pid !== "number" || typeof e.start !== "string") continue;
        if (startTimeOf(e.pid) !== e.start) continue;
        await killGroup(e.pid, graceMs);
        reaped++;
      }
    }
    rmSync(file, { force: true });
    return reaped;
  }
}
