import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { DeployError } from "../runtimes/interface.ts";

/**
 * `secret_references` resolved on this machine: reference `{name, secret_name, secret_key}` is the
 * file `<SLIPWAY_SECRET_REFS_DIR>/<secret_name>/<secret_key>` (the layout of a mounted Kubernetes
 * Secret), its whole content the value of `name`. Read at deploy time, never stored by Slipway.
 */

/** The Kubernetes limit on a whole Secret; a bigger file is a mistake, not a value. */
const MAX_BYTES = 1024 * 1024;

interface Reference {
  name: string;
  secret_name: string;
  secret_key: string;
}

function isReference(value: unknown): value is Reference {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return typeof r.name === "string" && typeof r.secret_name === "string" && typeof r.secret_key === "string";
}

/** One path segment, never a way out of the directory (the API checks the same, this is the last line). */
function safeSegment(s: string): boolean {
  return s !== "" && s !== "." && s !== ".." && !s.includes("/") && !s.includes("\0");
}

/** Every reference's value by name; a missing or unreadable one is a DeployError naming it (never a value). */
export async function resolveSecretReferences(
  dir: string | undefined,
  refs: unknown,
): Promise<Record<string, string>> {
  const values: Record<string, string> = {};
  if (!Array.isArray(refs) || refs.length === 0) return values;
  const fail: (r: Reference, why: string) => never = (r, why) => {
    throw new DeployError(
      `secret reference ${r.name} (secret "${r.secret_name}", key "${r.secret_key}") ${why}`,
    );
  };
  for (const r of refs) {
    if (!isReference(r)) throw new DeployError("a stored secret reference is malformed");
    if (dir === undefined) fail(r, "cannot be resolved: SLIPWAY_SECRET_REFS_DIR is not set on this server");
    if (!safeSegment(r.secret_name) || !safeSegment(r.secret_key)) {
      fail(r, "is not a usable file name");
    }
    const file = join(dir ?? "", r.secret_name, r.secret_key);
    let size: number;
    try {
      const info = await stat(file);
      if (!info.isFile()) fail(r, `was not found: ${r.secret_name}/${r.secret_key} is not a file`);
      size = info.size;
    } catch (err) {
      if (err instanceof DeployError) throw err;
      fail(r, `was not found: SLIPWAY_SECRET_REFS_DIR has no ${r.secret_name}/${r.secret_key}`);
    }
    if (size > MAX_BYTES) fail(r, `is larger than ${MAX_BYTES} bytes`);
    let value: string;
    try {
      value = await readFile(file, "utf8");
    } catch (err) {
      fail(r, `could not be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    }
    // An environment variable cannot hold NUL; say so instead of starting an app with a cut value.
    if (value.includes("\0")) fail(r, "holds a NUL byte, which an environment variable cannot carry");
    values[r.name] = value;
  }
  return values;
}
