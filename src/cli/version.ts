// The package's version, read from the package.json two levels up: src/cli/ and dist/cli/ both sit
// there, so the source and the build (and an installed copy) answer the same.
import { readFileSync } from "node:fs";

export function packageVersion(): string {
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  const { version } = JSON.parse(text) as { version?: unknown };
  return typeof version === "string" ? version : "unknown";
}
