import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import type { Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { createGunzip, createGzip, type Gzip } from "node:zlib";

/**
 * A backup file: gzip of newline-separated JSON, one value a line.
 *   1. the header, an object (BackupHeader);
 *   2. per table, `["t", name, [columns]]`, then one `["r", {column: value}]` per row;
 *   3. per sequence, `["s", name, last_value, is_called]`;
 *   4. the end, `["end", {rows, sha256, key_ids}]`: sha256 is the hex digest of every byte before
 *      this line, so a truncated file (no end) or a changed one (another digest) is refused.
 * Values are PostgreSQL's own JSON forms (to_jsonb), read back with jsonb_populate_recordset, so
 * a backup of either database restores into the other.
 */
export const FORMAT = 1;

export interface BackupHeader {
  slipway_backup: typeof FORMAT;
  slipway_version: string;
  /** Where it was taken: "pglite" (the embedded database) or "postgres". */
  database: "pglite" | "postgres";
  /** The database's schema version: the last migration applied. */
  schema_version: string;
  /** Every migration applied to the database. */
  migrations: string[];
  /** The active master key's id when the backup was taken (the key itself is never in a backup). */
  master_key_id: string;
  taken_at: string;
}

export interface BackupEnd {
  rows: number;
  sha256: string;
  /** Every master key id that a sealed value of the backup names: restoring needs them all. */
  key_ids: string[];
}

export type BackupLine =
  | ["t", string, string[]]
  | ["r", Record<string, unknown>]
  | ["s", string, string, boolean];

/** A sealed value's key id, wherever it stands in a row's JSON (crypto/envelope.ts's format). */
const ENVELOPE_KID = /"sw1\.([0-9a-f]{12})\./g;

/** Writes a backup: lines in, gzip out, with the digest and key ids kept for the end line. */
export class BackupWriter {
  private readonly gzip: Gzip;
  private readonly hash: Hash = createHash("sha256");
  private readonly kids = new Set<string>();
  private rowCount = 0;
  private readonly done: Promise<void>;

  constructor(out: Writable, header: BackupHeader) {
    this.gzip = createGzip({ level: 6 });
    this.gzip.pipe(out);
    this.done = new Promise((resolve, reject) => {
      out.once("finish", resolve);
      out.once("error", reject);
      this.gzip.once("error", reject);
    });
    this.put(JSON.stringify(header));
  }

  get rows(): number {
    return this.rowCount;
  }

  private put(text: string): boolean {
    const bytes = Buffer.from(`${text}\n`, "utf8");
    this.hash.update(bytes);
    return this.gzip.write(bytes);
  }

  /**
   * Adds rows given as their lines' text (`["r",{…}]`, made by the database: no parse here), one
   * write for them all; waits when gzip's buffer is full.
   */
  async rowLines(lines: string[]): Promise<void> {
    if (lines.length === 0) return;
    this.rowCount += lines.length;
    const text = lines.join("\n");
    for (const m of text.matchAll(ENVELOPE_KID)) if (m[1]) this.kids.add(m[1]);
    if (!this.put(text)) await new Promise((resolve) => this.gzip.once("drain", resolve));
  }

  /** Adds a line; waits when gzip's buffer is full, so memory stays bounded. */
  async line(value: BackupLine): Promise<void> {
    const text = JSON.stringify(value);
    if (value[0] === "r") {
      this.rowCount++;
      for (const m of text.matchAll(ENVELOPE_KID)) if (m[1]) this.kids.add(m[1]);
    }
    if (!this.put(text)) await new Promise((resolve) => this.gzip.once("drain", resolve));
  }

  /** Writes the end line and waits until everything reached `out`. */
  async end(): Promise<BackupEnd> {
    const end: BackupEnd = {
      rows: this.rowCount,
      sha256: this.hash.digest("hex"),
      key_ids: [...this.kids].sort(),
    };
    this.gzip.end(Buffer.from(`${JSON.stringify(["end", end])}\n`, "utf8"));
    await this.done;
    return end;
  }

  /** Gives up: what was written is not a backup (no end line). */
  abort(err: Error): void {
    this.gzip.destroy(err);
  }
}

/** A file that is not a whole, unchanged backup; the message says why in a sentence. */
export class BackupFileError extends Error {}

/** The text lines of a stream (its errors thrown, which a readline interface would not do). */
async function* splitLines(stream: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const decoder = new StringDecoder("utf8");
  let rest = "";
  for await (const chunk of stream) {
    rest += decoder.write(chunk);
    let nl = rest.indexOf("\n");
    while (nl >= 0) {
      yield rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      nl = rest.indexOf("\n");
    }
  }
  rest += decoder.end();
  if (rest !== "") yield rest;
}

function parseLine(text: string, lineNo: number): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new BackupFileError(`The backup file is damaged: line ${lineNo} is not JSON.`);
  }
}

function isHeader(v: unknown): v is BackupHeader {
  const h = v as Partial<BackupHeader> | null;
  return (
    typeof h === "object" &&
    h !== null &&
    h.slipway_backup === FORMAT &&
    typeof h.slipway_version === "string" &&
    Array.isArray(h.migrations) &&
    typeof h.master_key_id === "string"
  );
}

/**
 * Reads a backup file line by line: the header first, then every line, and checks the end line's
 * digest when it comes. Throws BackupFileError for anything but a whole, unchanged backup; a
 * caller that must not act on a damaged file reads it through once (`verifyBackup`) before acting.
 */
export async function* readBackup(
  path: string,
): AsyncGenerator<{ header: BackupHeader } | { line: BackupLine } | { end: BackupEnd }> {
  const hash = createHash("sha256");
  const input = createReadStream(path);
  const gunzip = createGunzip();
  input.once("error", (err) => gunzip.destroy(err));
  input.pipe(gunzip);
  const lines = splitLines(gunzip);
  let lineNo = 0;
  let ended = false;
  try {
    for await (const text of lines) {
      lineNo++;
      if (ended) throw new BackupFileError("The backup file is damaged: it goes on after its end line.");
      const value = parseLine(text, lineNo);
      if (lineNo === 1) {
        if (!isHeader(value))
          throw new BackupFileError("This is not a Slipway backup file (no backup header).");
        hash.update(`${text}\n`, "utf8");
        yield { header: value };
        continue;
      }
      if (Array.isArray(value) && value[0] === "end") {
        const end = value[1] as BackupEnd;
        if (end?.sha256 !== hash.digest("hex")) {
          throw new BackupFileError(
            "The backup file was changed after it was written: its checksum does not match.",
          );
        }
        ended = true;
        yield { end };
        continue;
      }
      hash.update(`${text}\n`, "utf8");
      if (!Array.isArray(value) || !["t", "r", "s"].includes(value[0] as string)) {
        throw new BackupFileError(`The backup file is damaged: line ${lineNo} is not a backup line.`);
      }
      yield { line: value as BackupLine };
    }
  } catch (err) {
    if (err instanceof BackupFileError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new BackupFileError(`There is no file ${path}.`);
    if (code?.startsWith("Z_") || code === "ERR_STREAM_PREMATURE_CLOSE") {
      throw new BackupFileError("The backup file is damaged or cut short: it does not decompress.");
    }
    throw err;
  } finally {
    input.destroy();
    gunzip.destroy();
  }
  if (lineNo === 0) throw new BackupFileError("The backup file is empty.");
  if (!ended) throw new BackupFileError("The backup file is cut short: it has no end line (checksum).");
}

/** Reads the whole file through: its header and end line when it is a whole, unchanged backup. */
export async function verifyBackup(path: string): Promise<{ header: BackupHeader; end: BackupEnd }> {
  let header: BackupHeader | undefined;
  let end: BackupEnd | undefined;
  for await (const item of readBackup(path)) {
    if ("header" in item) header = item.header;
    else if ("end" in item) end = item.end;
  }
  if (!header || !end)
    throw new BackupFileError("The backup file is cut short: it has no end line (checksum).");
  return { header, end };
}
