import { readdir, readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Children are spawned `detached`, which makes each one the leader of a new process group, so
 * signalling `-pid` reaches everything it started (npm → sh → node) and nothing else.
 */

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}

/**
 * Whether any live (non-zombie) process is left in the group. On Linux /proc is read, because
 * orphaned zombies keep `kill(-pgid, 0)` succeeding when PID 1 does not reap them (containers).
 */
export async function groupAlive(pgid: number): Promise<boolean> {
  if (process.platform === "linux") {
    let entries: string[];
    try {
      entries = await readdir("/proc");
    } catch {
      entries = [];
    }
    if (entries.length > 0) {
      for (const entry of entries) {
        if (!/^\d+$/.test(entry)) continue;
        let stat: string;
        try {
          stat = await readFile(`/proc/${entry}/stat`, "utf8");
        } catch {
          continue; // exited while we looked
        }
        // Fields after the parenthesised command name: state ppid pgrp …
        const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (Number(rest[2]) === pgid && rest[0] !== "Z") return true;
      }
      return false;
    }
  }
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pgid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!(await groupAlive(pgid))) return true;
    if (Date.now() >= deadline) return false;
    await sleep(25);
  }
}

/** SIGTERM the whole group, then SIGKILL whatever is left after `graceMs`. */
export async function killGroup(pgid: number, graceMs: number): Promise<void> {
  signalGroup(pgid, "SIGTERM");
  if (await waitGone(pgid, graceMs)) return;
  signalGroup(pgid, "SIGKILL");
  await waitGone(pgid, 2000);
}
