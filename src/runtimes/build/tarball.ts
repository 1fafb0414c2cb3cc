import { once } from "node:events";
import { posix } from "node:path";
import { pipeline, Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { type ReadEntry, x } from "tar";
import { SourceError } from "../interface.ts";
import { abortError } from "../shared/exec.ts";
import { type LocalLimits, sourceTooLarge, tooManyFiles } from "./limits.ts";

/** What may be written from an archive: files, directories and links that stay inside it. */
const ALLOWED = new Set(["File", "OldFile", "ContiguousFile", "Directory", "SymbolicLink", "Link"]);
const FILES = new Set(["File", "OldFile", "ContiguousFile"]);
const WHAT = "the source archive";
const SETTLE_MS = 30_000;

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
 * The tar stream of `source`: gunzipped here when it is gzip, so what is counted is the real
 * unpacked size (a bomb stops at the limit, not at the disk's end). Anything else is passed as is;
 * `tar` still recognises zstd and brotli, whose file sizes the entry check below bounds.
 */
async function* tarStream(source: Readable): AsyncGenerator<Buffer> {
  try {
    yield* decompressed(source);
  } finally {
    source.destroy();
  }
}

async function* decompressed(source: Readable): AsyncGenerator<Buffer> {
  const it = source[Symbol.asyncIterator]();
  let head = Buffer.alloc(0);
  while (head.length < 2) {
    const next = await it.next();
    if (next.done) break;
    head = Buffer.concat([head, Buffer.from(next.value)]);
  }
  const raw = Readable.from(
    (async function* () {
      if (head.length > 0) yield head;
      for (;;) {
        const next = await it.next();
        if (next.done) return;
        yield Buffer.from(next.value);
      }
    })(),
  );
  if (head[0] !== 0x1f || head[1] !== 0x8b) {
    yield* raw;
    return;
  }
  // Concatenated gzip members are one stream to gunzip, as to `tar xz`.
  yield* pipeline(raw, createGunzip(), () => {});
}

/**
 * Unpacks a .tar.gz (or plain .tar) into `dir`. Any absolute path, `..` entry or link leaving the
 * directory refuses the whole archive (SourceError); devices and FIFOs are skipped. The unpacked
 * stream is counted as it arrives: past `limits.sourceBytes`, or past `limits.sourceMaxFiles`
 * entries, unpacking stops (SourceError) with at most the limit written; the caller removes `dir`.
 */
export async function extractTarball(
  source: Readable,
  dir: string,
  signal: AbortSignal,
  limits: Pick<LocalLimits, "sourceBytes" | "sourceMaxFiles">,
): Promise<void> {
  const problems: string[] = [];
  let refusal: SourceError | undefined;
  let entries = 0;
  let fileBytes = 0;
  const unpack = x({
    cwd: dir,
    strict: true,
    // Root would otherwise restore the archive's uid/gid onto our files.
    preserveOwner: false,
    filter: (_path, entry) => {
      if (!("type" in entry) || refusal !== undefined) return false;
      entries++;
      if (entries > limits.sourceMaxFiles) refusal = tooManyFiles(WHAT, limits.sourceMaxFiles);
      // Sizes are in the headers: a file that would pass the limit is refused before it is written.
      if (FILES.has(entry.type)) fileBytes += entry.size;
      if (fileBytes > limits.sourceBytes) refusal ??= sourceTooLarge(WHAT, limits.sourceBytes);
      if (refusal !== undefined || !ALLOWED.has(entry.type)) return false;
      const problem = problemWith(entry);
      if (problem !== undefined) problems.push(problem);
      return problem === undefined;
    },
  });
  let failure: Error | undefined;
  unpack.on("error", (err: Error) => {
    failure ??= err;
  });
  // "close" comes once every file written is closed; "abort" when tar gave up on its own. The
  // timer is a backstop only: a stuck unpacker must not hold the revision forever.
  const settled = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, SETTLE_MS);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    unpack.once("close", done);
    unpack.once("abort", done);
  });

  const stream = tarStream(source);
  let unpacked = 0;
  try {
    for await (const chunk of stream) {
      if (signal.aborted || refusal !== undefined || failure !== undefined) break;
      unpacked += chunk.length;
      if (unpacked > limits.sourceBytes) {
        refusal = sourceTooLarge(WHAT, limits.sourceBytes);
        break;
      }
      if (!unpack.write(chunk)) {
        await Promise.race([once(unpack, "drain", { signal }), settled]).catch(() => undefined);
      }
    }
  } catch (err) {
    failure ??= err as Error;
  } finally {
    await stream.return(undefined);
  }
  // Ending (rather than destroying) the unpacker lets the file being written close: a cut-off
  // archive leaves no open descriptor holding its blocks after the directory is removed.
  unpack.end();
  await settled;

  if (signal.aborted) throw abortError(signal);
  if (refusal !== undefined) throw refusal;
  if (problems.length > 0) throw new SourceError(`the uploaded archive was refused: ${problems[0]}`);
  if (failure !== undefined) {
    throw new SourceError(`the uploaded archive could not be unpacked: ${failure.message}`);
  }
}
