import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Keyring } from "./envelope.ts";

/**
 * The key file of the embedded default: one base64 key a line, the first is active, the rest are
 * previous keys kept so that values not yet rotated stay readable. Mode 0600.
 */
export function keyFilePath(dataDir: string): string {
  return join(dataDir, "master.key");
}

function readKeyFile(path: string): string[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}

function writeKeyFile(path: string, keys: string[]): void {
  writeFileSync(path, `${keys.join("\n")}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}

export interface LoadedKeyring {
  keyring: Keyring;
  source: "env" | "file" | "generated";
}

/** Where the keys come from: config.ts's SLIPWAY_MASTER_KEY, SLIPWAY_PREVIOUS_MASTER_KEYS and data dir. */
export interface KeySettings {
  /** The active key (base64), or undefined to use (or make) the key file. */
  masterKey: string | undefined;
  /** Keys that values not yet rotated may still be sealed under. */
  previousMasterKeys: string[];
  dataDir: string;
}

export function loadKeyring(config: KeySettings): LoadedKeyring {
  if (config.masterKey) {
    return { keyring: Keyring.fromBase64(config.masterKey, config.previousMasterKeys), source: "env" };
  }
  const path = keyFilePath(config.dataDir);
  if (existsSync(path)) {
    const [active, ...previous] = readKeyFile(path);
    if (!active) throw new Error(`${path} is empty; restore it or remove it to generate a new key.`);
    return {
      keyring: Keyring.fromBase64(active, [...previous, ...config.previousMasterKeys]),
      source: "file",
    };
  }
  mkdirSync(config.dataDir, { recursive: true });
  const key = randomBytes(32).toString("base64");
  writeKeyFile(path, [key]);
  return { keyring: Keyring.fromBase64(key, config.previousMasterKeys), source: "generated" };
}

/** Puts a new active key at the head of the key file, keeping the old ones readable. */
export function addKeyToFile(dataDir: string): string {
  const path = keyFilePath(dataDir);
  const existing = existsSync(path) ? readKeyFile(path) : [];
  const key = randomBytes(32).toString("base64");
  writeKeyFile(path, [key, ...existing]);
  return key;
}
