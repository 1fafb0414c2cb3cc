import { existsSync, readFileSync } from "node:fs";
import { keyId } from "../crypto/envelope.ts";
import { type KeySettings, keyFilePath } from "../crypto/master-key.ts";

/**
 * The ids of the master keys configured here (SLIPWAY_MASTER_KEY and SLIPWAY_PREVIOUS_MASTER_KEYS,
 * or the data dir's key file), active first, read without making a key: a restore that is refused
 * writes nothing, not even a new key file.
 */
export function configuredKeyIds(settings: KeySettings): string[] {
  const fromFile = (): string[] => {
    const path = keyFilePath(settings.dataDir);
    if (!existsSync(path)) return [];
    return readFileSync(path, "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean);
  };
  const keys = settings.masterKey ? [settings.masterKey] : fromFile();
  return [...keys, ...settings.previousMasterKeys].map((k) => keyId(Buffer.from(k, "base64")));
}
