// The package's version, from the package.json two levels up (src/backup/ and dist/backup/ both
// sit there): the backup header names the Slipway that wrote it.
import { readFileSync } from "node:fs";

export function slipwayVersion(): string {
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  const { version } = JSON.parse(text) as { version?: unknown };
  return typeof version === "string" ? version : "unknown";
}
