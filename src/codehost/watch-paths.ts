import { matchesGlob } from "node:path";

/**
 * `watch_paths` of an app config (docs/codehost.md, "Build on push"): globs of repository paths; a push that
 * changes none of them makes no revision. The one place this key is read.
 */

const MAX_GLOBS = 100;

export type WatchPaths =
  /** No filter: the config has no `watch_paths` (every push builds). */
  | { kind: "all" }
  | { kind: "globs"; globs: string[] }
  /** The key is there but malformed: every push builds, and the answer says why. */
  | { kind: "invalid"; reason: string };

/** `watch_paths` of an app config file's text (JSON); a file that is not JSON has no filter. */
export function watchPathsOf(configText: string | undefined): WatchPaths {
  if (configText === undefined) return { kind: "all" };
  let parsed: unknown;
  try {
    parsed = JSON.parse(configText);
  } catch {
    return { kind: "all" };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { kind: "all" };
  const value = (parsed as Record<string, unknown>).watch_paths;
  if (value === undefined || value === null) return { kind: "all" };
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length > MAX_GLOBS ||
    !value.every((g) => typeof g === "string" && g.trim() !== "" && g.length <= 1024)
  ) {
    return {
      kind: "invalid",
      reason: `"watch_paths" must be a list of 1 to ${MAX_GLOBS} non-empty glob strings; it was ignored.`,
    };
  }
  return { kind: "globs", globs: value.map((g: string) => g.trim().replace(/^\.?\//, "")) };
}

/**
 * Whether any changed path matches any glob (`*` within a directory, `**` across directories,
 * as Node's `path.matchesGlob`); a glob naming a directory (`api/` or `api`) covers what is under it.
 */
export function touchesWatchPaths(files: readonly string[], globs: readonly string[]): boolean {
  const patterns = globs.flatMap((g) => {
    const dir = g.replace(/\/+$/, "");
    return g.endsWith("/") ? [`${dir}/**`] : [g, `${dir}/**`];
  });
  return files.some((f) => patterns.some((p) => matchesGlob(f, p)));
}
