import { readdir, readFile, realpath } from "node:fs/promises";
import { join } from "node:path";
import { fail } from "../../app-config.ts";

/** Where Debian installs its interpreters (`python3.11`, …); builds use only these. */
const SYSTEM_BIN = "/usr/bin";

/** An interpreter on this machine: `/usr/bin/python3.11` is version `3.11`. */
export interface Interpreter {
  version: string;
  path: string;
}

/** The interpreters in `/usr/bin`, oldest first, and the one `python3` names (the default). */
export async function systemInterpreters(
  bin = SYSTEM_BIN,
): Promise<{ all: Interpreter[]; preferred?: Interpreter }> {
  let names: string[];
  try {
    names = await readdir(bin);
  } catch {
    names = [];
  }
  const all = names
    .flatMap((name) => {
      const m = /^python(3\.\d+)$/.exec(name);
      return m?.[1] === undefined ? [] : [{ version: m[1], path: join(bin, name) }];
    })
    .sort((a, b) => minorOf(a.version) - minorOf(b.version));
  let preferred: Interpreter | undefined;
  try {
    const target = await realpath(join(bin, "python3"));
    preferred = all.find((i) => target.endsWith(`/python${i.version}`));
  } catch {
    // No python3 link: the newest is the default.
  }
  const pick = preferred ?? all.at(-1);
  return pick === undefined ? { all } : { all, preferred: pick };
}

function minorOf(version: string): number {
  return Number(version.split(".")[1] ?? 0);
}

/** A version asked for, and the file (or config key) that asked. */
export interface VersionRequest {
  version: string;
  from: string;
}

async function firstLine(path: string): Promise<string | undefined> {
  try {
    const text = await readFile(path, "utf8");
    return text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l !== "" && !l.startsWith("#"));
  } catch {
    return undefined;
  }
}

/**
 * The version the source asks for: the app config's `python_version` first, then `.python-version`
 * (pyenv: `3.11` or `3.11.4`), then `runtime.txt` (Heroku: `python-3.11.4`); none: the default.
 */
export async function requestedVersion(
  appDir: string,
  configVersion: string | undefined,
): Promise<VersionRequest | undefined> {
  if (configVersion !== undefined) return { version: configVersion.trim(), from: "python_version" };
  const pyenv = await firstLine(join(appDir, ".python-version"));
  if (pyenv !== undefined) return { version: pyenv, from: ".python-version" };
  const runtime = await firstLine(join(appDir, "runtime.txt"));
  if (runtime !== undefined) return { version: runtime.replace(/^python-/, ""), from: "runtime.txt" };
  return undefined;
}

/**
 * The interpreter for a request: matched on major.minor (`3.11.4` takes `3.11`: Debian carries one
 * patch release per minor); `3` takes the default. Anything not on the machine fails the build,
 * naming what was asked and what exists.
 */
export function pickInterpreter(
  request: VersionRequest | undefined,
  found: { all: Interpreter[]; preferred?: Interpreter },
  log: (line: string) => void,
): Interpreter {
  const exists = found.all.length > 0 ? found.all.map((i) => i.version).join(", ") : "none";
  if (request === undefined) {
    if (found.preferred === undefined)
      fail(log, `no Python interpreter on this machine (${SYSTEM_BIN}/python3.*)`);
    return found.preferred;
  }
  const m = /^(\d+)(?:\.(\d+))?(?:\.\d+)?$/.exec(request.version);
  if (m === null) {
    fail(
      log,
      `python ${JSON.stringify(request.version)} (from ${request.from}) is not a version this machine ` +
        `can match (write e.g. 3.11); Python versions here: ${exists}`,
    );
  }
  const [, major, minor] = m;
  const match =
    minor === undefined
      ? major === "3"
        ? found.preferred
        : undefined
      : found.all.find((i) => i.version === `${major}.${minor}`);
  if (match === undefined) {
    fail(
      log,
      `python ${request.version} (from ${request.from}) is not on this machine; Python versions here: ${exists}`,
    );
  }
  return match;
}
