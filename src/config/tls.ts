import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Config, ConfigError } from "../config.ts";
import { choiceVar, type Env, intVar } from "./vars.ts";

/** HTTPS on the apps listener (docs/https.md): the mode, its port, and what each mode needs. */

export const TLS_MODES = ["off", "internal", "acme", "files"] as const;
export type TlsMode = (typeof TLS_MODES)[number];

function caFile(env: Env): string | undefined {
  const path = env.SLIPWAY_ACME_CA_FILE || undefined;
  if (path === undefined) return undefined;
  let pem: string;
  try {
    pem = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`SLIPWAY_ACME_CA_FILE cannot be read (${(err as Error).message}).`);
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
    throw new ConfigError(`SLIPWAY_ACME_CA_FILE must hold PEM certificates, and ${path} holds none.`);
  }
  return pem;
}

function directoryUrl(env: Env, mode: TlsMode): string | undefined {
  const raw = env.SLIPWAY_ACME_DIRECTORY_URL?.trim() || undefined;
  if (raw === undefined) {
    if (mode === "acme") {
      throw new ConfigError(
        "SLIPWAY_APPS_TLS=acme needs SLIPWAY_ACME_DIRECTORY_URL (e.g. https://acme-v02.api.letsencrypt.org/directory).",
      );
    }
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`SLIPWAY_ACME_DIRECTORY_URL must be an https URL, got "${raw}".`);
  }
  // RFC 8555 section 6.1: ACME is spoken over HTTPS only.
  if (url.protocol !== "https:") {
    throw new ConfigError(`SLIPWAY_ACME_DIRECTORY_URL must be an https URL, got "${raw}".`);
  }
  return url.href;
}

function email(env: Env): string | undefined {
  const raw = env.SLIPWAY_ACME_EMAIL?.trim() || undefined;
  if (raw !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(raw)) {
    throw new ConfigError(`SLIPWAY_ACME_EMAIL must be an email address, got "${raw}".`);
  }
  return raw;
}

export function tlsVars(env: Env, appsPort: number): Config["apps"]["tls"] {
  const mode = choiceVar(env, "SLIPWAY_APPS_TLS", TLS_MODES);
  const port = intVar(env, "SLIPWAY_APPS_TLS_PORT", 8443, 0, 65535);
  if (mode !== "off" && port !== 0 && port === appsPort) {
    throw new ConfigError(`SLIPWAY_APPS_TLS_PORT must differ from SLIPWAY_APPS_PORT (both are ${port}).`);
  }
  const rawDir = env.SLIPWAY_APPS_TLS_DIR || undefined;
  if (mode === "files" && rawDir === undefined) {
    throw new ConfigError(
      "SLIPWAY_APPS_TLS=files needs SLIPWAY_APPS_TLS_DIR, the directory of <host>.crt and <host>.key.",
    );
  }
  return {
    mode,
    port,
    acme: { directoryUrl: directoryUrl(env, mode), ca: caFile(env), email: email(env) },
    dir: rawDir === undefined ? undefined : resolve(rawDir),
    checkEveryMs: intVar(env, "SLIPWAY_CERT_CHECK_MS", 60_000, 100, 86_400_000),
    handshakeTimeoutMs: intVar(env, "SLIPWAY_APPS_TLS_HANDSHAKE_TIMEOUT_MS", 10_000, 100, 600_000),
  };
}
