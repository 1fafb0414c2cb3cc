import { mkdirSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { observeGroups } from "../../shared/spawned-groups.ts";
import type { RuntimeLogger } from "../options.ts";
import { ProcessRecord, startTimeOf } from "./orphans.ts";

/**
 * Build processes (install and build steps, source fetches) run in process groups of their own,
 * so they outlive a Slipway killed with SIGKILL, as app processes do. Each Slipway process records
 * the groups it starts under the data dir in a file named after itself (pid and kernel start
 * time), `runtime/build-processes/<pid>-<start>.json`; at start, a runtime ends the groups recorded
 * by processes that are gone (start times checked, so a reused pid is never signalled) and forgets
 * their files. A file whose process still runs (another Slipway on the same data dir) is left alone.
 */
export function buildRecordsDir(dataDir: string): string {
  return join(dataDir, "runtime", "build-processes");
}

/** Ends what dead Slipway processes' builds left running; returns how many groups were ended. */
export async function reapBuildGroups(dataDir: string, graceMs: number): Promise<number> {
  const dir = buildRecordsDir(dataDir);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let reaped = 0;
  for (const name of names) {
    const owner = /^(\d+)-(\d+)\.json$/.exec(name);
    if (!owner) continue;
    const [, pid, start] = owner;
    if (startTimeOf(Number(pid)) === start) continue; // its Slipway still runs
    reaped += await ProcessRecord.reap(join(dir, name), graceMs);
  }
  return reaped;
}

/**
 * Reaps what dead processes left, then records the groups this process starts for work under
 * `dataDir` from now on. Idempotent: a second call replaces the first's observer.
 */
export async function watchBuildGroups(
  dataDir: string,
  graceMs: number,
  logger: RuntimeLogger,
): Promise<number> {
  const reaped = await reapBuildGroups(dataDir, graceMs);
  if (reaped > 0) logger.info({ reaped }, "ended build processes a killed Slipway left running");
  const dir = buildRecordsDir(dataDir);
  mkdirSync(dir, { recursive: true });
  const record = new ProcessRecord(join(dir, `${process.pid}-${startTimeOf(process.pid) ?? "0"}.json`));
  observeGroups(dataDir, (pid, cwd) => {
    const inside = relative(dataDir, cwd);
    if (inside.startsWith("..") || inside.startsWith("/")) return undefined;
    record.add(pid);
    return () => record.remove(pid);
  });
  return reaped;
}

/** Stops recording (the runtime closed); what is still recorded is reaped by the next start. */
export function unwatchBuildGroups(dataDir: string): void {
  observeGroups(dataDir, undefined);
}
