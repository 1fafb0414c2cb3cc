import { BuildError, SourceError } from "../interface.ts";

/** What one revision may take on this machine (SLIPWAY_SOURCE_LIMIT_BYTES and friends). */
export interface LocalLimits {
  /** Unpacked size of a source: an archive's tar stream, or a clone with its checkout. */
  sourceBytes: number;
  /** Entries in an archive, or files in a repository's tree. */
  sourceMaxFiles: number;
  /** The revision's directory while install and build run. */
  buildDiskBytes: number;
  /** One deployment's dependency cache (SLIPWAY_BUILD_CACHE_MB; default 2 GiB, build/cache.ts). */
  buildCacheBytes?: number;
}

export const DEFAULT_LIMITS: LocalLimits = {
  sourceBytes: 1024 ** 3,
  sourceMaxFiles: 100_000,
  buildDiskBytes: 4096 * 1024 * 1024,
};

/** "1 GiB", "5 MiB", else the exact count: limits are set in bytes, so show them as set. */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of [
    ["GiB", 1024 ** 3],
    ["MiB", 1024 ** 2],
    ["KiB", 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit}`;
  }
  return `${bytes} bytes`;
}

export function sourceTooLarge(what: string, limitBytes: number, state = "unpacked"): SourceError {
  return new SourceError(
    `${what} is larger than ${formatBytes(limitBytes)} ${state} (SLIPWAY_SOURCE_LIMIT_BYTES)`,
  );
}

export function tooManyFiles(what: string, maxFiles: number): SourceError {
  return new SourceError(`${what} holds more than ${maxFiles} files (SLIPWAY_SOURCE_MAX_FILES)`);
}

export function buildDiskExceeded(limitBytes: number): BuildError {
  const mb = Math.floor(limitBytes / (1024 * 1024));
  return new BuildError(`the build directory grew past ${mb} MB (SLIPWAY_BUILD_DISK_LIMIT_MB)`);
}
