import type { ChildProcess } from "node:child_process";

/**
 * Who is told about the process groups `run` (exec.ts) starts: builds, source fetches and image
 * pulls. The local runtime records those under its data dir so that the next Slipway can end what
 * a SIGKILLed one left running (local/processes/build-groups.ts). Observers are keyed (by data
 * dir), so a runtime started twice replaces its own.
 */
export type GroupObserver = (pid: number, cwd: string) => (() => void) | undefined;

const observers = new Map<string, GroupObserver>();

export function observeGroups(key: string, observer: GroupObserver | undefined): void {
  if (observer) observers.set(key, observer);
  else observers.delete(key);
}

/** Tells the observers about a group `run` just started, and again once it has closed. */
export function trackGroup(child: ChildProcess, cwd: string): void {
  const pid = child.pid;
  if (pid === undefined || observers.size === 0) return;
  const ends = [...observers.values()].map((observe) => observe(pid, cwd));
  child.once("close", () => {
    for (const end of ends) end?.();
  });
}
