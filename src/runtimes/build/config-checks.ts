import { realpath } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import { BuildError } from "../interface.ts";

/** What the app config readers (app-config.ts, framework-config.ts) share. */

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function fail(log: (line: string) => void, message: string): never {
  log(`error: ${message}`);
  throw new BuildError(message);
}

/**
 * The real path of `path` (relative to the source), refusing absolute paths, `..` escapes and
 * symlinks that leave the source; undefined when nothing is there. `what` names it in messages.
 */
export async function insideSource(
  appDir: string,
  path: string,
  what: string,
  log: (line: string) => void,
): Promise<string | undefined> {
  if (isAbsolute(path)) fail(log, `${what} "${path}" must be relative to the source`);
  const root = await realpath(appDir);
  // Checked before the file is looked for, so a path outside says so whether or not it exists.
  const lexical = relative(root, resolve(root, path));
  if (lexical.startsWith("..") || isAbsolute(lexical))
    fail(log, `${what} "${path}" points outside the source`);
  let real: string;
  try {
    real = await realpath(resolve(appDir, path));
  } catch {
    return undefined;
  }
  const inside = relative(root, real);
  if (inside.startsWith("..") || isAbsolute(inside)) fail(log, `${what} "${path}" points outside the source`);
  return real;
}
