// The package's version, read from the package.json two levels up: src/cli/ and dist/cli/ both sit
// there. The client's own reader: clients reach no server code but cli/serve.ts (config/version.ts is the server's).
import { readFileSync } from "node:fs";

export function packageVersion(): string {
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  const { version } = JSON.parse(text) as { version?: unknown };
  return typeof version === "string" ? version : "unknown";
}
