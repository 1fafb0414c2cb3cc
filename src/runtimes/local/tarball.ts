import { posix } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { type ReadEntry, x } from "tar";
import { SourceError } from "../interface.ts";
import { abortError } from "./exec.ts";

/** What may be written from an archive: files, directories and links that stay inside it. */
const ALLOWED = new Set(["File", "OldFile", "ContiguousFile", "Directory", "SymbolicLink", "Link"]);

function escapes(path: string): boolean {
  return (
    path.startsWith("/") || /^[A-Za-z]:/.test(path) || path.includes("\\") || path.split("/").includes("..")
  );
}

/** Why an entry is refused, or undefined when it is fine. */
function problemWith(entry: ReadEntry): string | undefined {
  const path = entry.path;
  if (escapes(path)) return `entry "${path}" points outside the archive`;
  if (entry.type === "Link" && (entry.linkpath === undefined || escapes(entry.linkpath))) {
    return `hard link "${path}" points outside the archive`;
  }
  if (entry.type === "SymbolicLink") {
    const target = entry.linkpath ?? "";
    const resolved = posix.normalize(posix.join(posix.dirname(path), target));
    if (target.startsWith("/") || resolved === ".." || resolved.startsWith("../")) {
      return `symbolic link "${path}" points outside the archive`;
    }
  }
  return undefined;
}

/**
 * Unpacks a .tar.gz (or plain .tar) into `dir`. Any absolute path, `..` entry or link leaving the
 * directory refuses the whole archive (SourceError); devices and FIFOs are skipped.
 */
export async function extractTarball(source: Readable, dir: string, signal: AbortSignal): Promise<void> {
  const problems: string[] = [];
  const unpack = x({
    cwd: dir,
    strict: true,
    // Root would otherwise restore the archive's uid/gid onto our files.
    preserveOwner: false,
    filter: (_path, entry) => {
      if (!("type" in entry)) return false;
      if (!ALLOWED.has(entry.type)) return false;
      const problem = problemWith(entry);
      if (problem !== undefined) problems.push(problem);
      return problem === undefined;
    },
  });
  try {
    // tar recognises gzip (and zstd) by its magic bytes.
    await pipeline(source, unpack, { signal });
  } catch (err) {
    if (signal.aborted) throw abortError(signal);
    if (problems.length > 0) throw new SourceError(`the uploaded archive was refused: ${problems[0]}`);
    throw new SourceError(`the uploaded archive could not be unpacked: ${(err as Error).message}`);
  }
  if (problems.length > 0) throw new SourceError(`the uploaded archive was refused: ${problems[0]}`);
}
