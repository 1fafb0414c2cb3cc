import { hash, randomBytes } from "node:crypto";

/** `sw_` + 256 random bits: high entropy, so one SHA-256 (no salt, no KDF) is a safe index. */
export function generateApiKey(): string {
  return `sw_${randomBytes(32).toString("base64url")}`;
}

/** Every authenticated request hashes its key: the one-shot hash makes no Hash object. */
export function hashApiKey(key: string): string {
  return hash("sha256", key, "hex");
}

/** What a listing shows so a person can tell keys apart; never enough to use. */
export function displayPrefix(key: string): string {
  return key.slice(0, 10);
}
