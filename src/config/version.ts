// Slipway's version, read from the package.json two levels up: src/config/ and dist/config/ both sit
// there, so the source, the build and an installed copy answer the same. One reader for the CLI's
// --version, the backup header, the OpenAPI document and the MCP client's name.
import { readFileSync } from "node:fs";

let cached: string | undefined;

export function slipwayVersion(): string {
  if (cached !== undefined) return cached;
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  const { version } = JSON.parse(text) as { version?: unknown };
  cached = typeof version === "string" ? version : "unknown";
  return cached;
}
