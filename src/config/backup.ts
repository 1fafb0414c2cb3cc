import { isAbsolute } from "node:path";
import { type Config, ConfigError } from "../config.ts";
import { type Env, intVar } from "./vars.ts";

const DAY_MS = 86_400_000;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: DAY_MS };

/** A duration as `30s`, `15m`, `6h` or `1d` (one number, one unit), in milliseconds. */
export function durationMs(name: string, raw: string): number {
  const m = /^(\d+)([smhd])$/.exec(raw.trim());
  const ms = m ? Number(m[1]) * (UNIT_MS[m[2] ?? ""] ?? 0) : 0;
  if (!m || ms < 1000 || ms > 366 * DAY_MS) {
    throw new ConfigError(`${name} must be a duration such as 30m, 6h or 1d (1s to 366d), got "${raw}".`);
  }
  return ms;
}

/** Scheduled backups (docs/operations.md#scheduled-backups): off unless SLIPWAY_BACKUP_DIR is set. */
export function backupVars(env: Env): Config["backups"] {
  const dir = env.SLIPWAY_BACKUP_DIR || undefined;
  if (dir !== undefined && !isAbsolute(dir)) {
    throw new ConfigError(`SLIPWAY_BACKUP_DIR must be an absolute path, got "${dir}".`);
  }
  const every = env.SLIPWAY_BACKUP_EVERY || "1d";
  return {
    dir,
    everyMs: durationMs("SLIPWAY_BACKUP_EVERY", every),
    keep: intVar(env, "SLIPWAY_BACKUP_KEEP", 7, 1, 10_000),
  };
}
