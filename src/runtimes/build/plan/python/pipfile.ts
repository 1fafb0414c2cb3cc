import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fail } from "../../app-config.ts";

/** The requirements file written from Pipfile.lock, beside it: pip installs it, pipenv is not needed. */
export const PIPFILE_REQUIREMENTS = ".slipway-pipfile-requirements.txt";

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** One `default` entry of the lock as a requirement line (without hashes), or why it cannot be. */
function requirementOf(name: string, entry: Record<string, unknown>): string | undefined {
  const extras = Array.isArray(entry.extras)
    ? `[${entry.extras.filter((e): e is string => typeof e === "string").join(",")}]`
    : "";
  const markers =
    typeof entry.markers === "string" && entry.markers.trim() !== "" ? ` ; ${entry.markers}` : "";
  if (typeof entry.path === "string") {
    return `${entry.editable === true ? "-e " : ""}${entry.path}${markers}`;
  }
  if (typeof entry.file === "string") return `${entry.file}${markers}`;
  if (typeof entry.git === "string") {
    const ref = typeof entry.ref === "string" ? `@${entry.ref}` : "";
    return `${name}${extras} @ git+${entry.git.replace(/^git\+/, "")}${ref}${markers}`;
  }
  // `"*"` is pipenv's "any version": the bare name.
  if (entry.version === undefined || entry.version === "*") return `${name}${extras}${markers}`;
  if (typeof entry.version === "string") return `${name}${extras}${entry.version}${markers}`;
  return undefined;
}

/**
 * Writes the pinned `default` packages of `Pipfile.lock` as a requirements file pip installs. With
 * every entry hashed (as pipenv locks them) the hashes go too, so pip checks what it downloads.
 * The lock's own `sources` are not used: packages come from the configured indexes.
 */
export async function writePipfileRequirements(appDir: string, log: (line: string) => void): Promise<number> {
  let lock: unknown;
  try {
    lock = JSON.parse(await readFile(join(appDir, "Pipfile.lock"), "utf8"));
  } catch (err) {
    fail(log, `Pipfile.lock could not be read as JSON: ${(err as Error).message}`);
  }
  if (!isObject(lock) || (lock.default !== undefined && !isObject(lock.default))) {
    fail(log, `Pipfile.lock must be an object whose "default" maps package names to their pins`);
  }
  const entries = Object.entries(isObject(lock.default) ? lock.default : {});
  const hashed = entries.every(
    ([, e]) => isObject(e) && Array.isArray(e.hashes) && e.hashes.length > 0 && typeof e.version === "string",
  );
  const lines: string[] = [];
  for (const [name, entry] of entries) {
    const line = NAME.test(name) && isObject(entry) ? requirementOf(name, entry) : undefined;
    if (line === undefined)
      fail(log, `Pipfile.lock: the "default" entry "${name}" is not a pin pip can install`);
    const hashes =
      hashed && isObject(entry) && Array.isArray(entry.hashes)
        ? entry.hashes.filter((h): h is string => typeof h === "string").map((h) => ` --hash=${h}`)
        : [];
    lines.push(`${line}${hashes.join("")}`);
  }
  await writeFile(
    join(appDir, PIPFILE_REQUIREMENTS),
    `# Written by Slipway from Pipfile.lock\n${lines.join("\n")}\n`,
  );
  return lines.length;
}
