import { rmSync, writeFileSync } from "node:fs";

/**
 * Writes `env` as an engine env file (`NAME=value` lines, values verbatim) readable only by its
 * owner, and returns the entries a line cannot hold (values with CR or LF), which the caller passes
 * by name from the engine CLI's environment. Either way no value ever appears on a command line.
 */
export function writeEnvFile(path: string, env: Record<string, string>): Record<string, string> {
  const lines: string[] = [];
  const byName: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (/[\r\n]/.test(value)) byName[name] = value;
    else lines.push(`${name}=${value}\n`);
  }
  // A leftover of an interrupted start could carry other permissions: start from no file.
  rmSync(path, { force: true });
  writeFileSync(path, lines.join(""), { mode: 0o600, flag: "wx" });
  return byName;
}
