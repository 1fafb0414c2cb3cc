import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { resolve } from "node:path";
import {
  type Config,
  ConfigError,
  type DatabaseTarget,
  type LogLevel,
  type RegistryTokenConfig,
  type UidRange,
} from "../config.ts";
import { RegistryTokenError, RegistryTokenSigner } from "../crypto/registry-token.ts";

/** Each kind of setting read from the environment, checked, with a sentence naming it when it is wrong. */

export type Env = Record<string, string | undefined>;

export const LOG_LEVELS: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}".`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}.`);
  return value;
}

export function boolVar(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}".`);
}

export function choiceVar<T extends string>(env: Env, name: string, choices: readonly T[]): T {
  const raw = env[name] || "";
  const wanted = raw.trim().toLowerCase() || choices[0];
  const found = choices.find((c) => c === wanted);
  if (found === undefined)
    throw new ConfigError(`${name} must be one of ${choices.join(", ")}, got "${raw}".`);
  return found;
}

/** Highest id usable: 2^32-1 is "no id" to the kernel (chown's -1). */
export const MAX_ID = 4_294_967_294;

export function absolutePathVar(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  if (!raw.startsWith("/") || raw.includes("\0"))
    throw new ConfigError(`${name} must be an absolute path, got "${raw}".`);
  return raw;
}

export function uidRangeVar(env: Env): UidRange {
  const raw = env.SLIPWAY_APP_UID_RANGE || "200000-265535";
  const m = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(raw);
  const first = Number(m?.[1]);
  const last = Number(m?.[2]);
  // Below 1000 are the system's own users; a deployment must never share one of them.
  if (!m || first < 1000 || last > MAX_ID || first > last) {
    throw new ConfigError(
      `SLIPWAY_APP_UID_RANGE must be "<first>-<last>" with 1000 <= first <= last <= ${MAX_ID}, got "${raw}".`,
    );
  }
  return { first, last };
}

/** An http(s) URL, as a one-item list; empty when unset. */
export function urlVar(env: Env, name: string): string[] {
  const raw = env[name]?.trim();
  if (!raw) return [];
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}".`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}".`);
  }
  return [url.href];
}

/** A comma-separated list of CIDR ranges (`10.0.0.0/8`, `fd00::/8`); empty when unset. */
export function cidrListVar(env: Env, name: string): string[] {
  const raw = env[name]?.trim();
  if (!raw) return [];
  return raw.split(",").map((item) => {
    const cidr = item.trim();
    const [address = "", bits, extra] = cidr.split("/");
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    const prefix = Number(bits);
    if (family === 0 || extra !== undefined || bits === undefined || !/^\d+$/.test(bits) || prefix > max) {
      throw new ConfigError(`${name}: "${cidr}" is not a CIDR range such as 10.0.0.0/8 or fd00::/8.`);
    }
    return `${address}/${prefix}`;
  });
}

export function trustProxyVar(env: Env): boolean | string[] {
  const raw = (env.SLIPWAY_TRUST_PROXY ?? "").trim();
  if (raw === "" || raw === "false") return false;
  if (raw === "true") return true;
  const entries = raw.split(",").map((e) => e.trim());
  for (const entry of entries) {
    const [address, bits, extra] = entry.split("/");
    const family = isIP(address ?? "");
    const maxBits = family === 6 ? 128 : 32;
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    if (family === 0 || !bitsOk || extra !== undefined) {
      throw new ConfigError(
        `SLIPWAY_TRUST_PROXY must be true, false, or a comma-separated list of proxy addresses or CIDR ranges, got "${raw}".`,
      );
    }
  }
  return entries;
}

export function masterKeyVar(name: string, raw: string): string {
  const bytes = Buffer.from(raw, "base64");
  if (bytes.length !== 32 || bytes.toString("base64").replace(/=+$/, "") !== raw.trim().replace(/=+$/, "")) {
    throw new ConfigError(`${name} must be the base64 encoding of exactly 32 bytes.`);
  }
  return bytes.toString("base64");
}

export function databaseVar(env: Env, dataDir: string): DatabaseTarget {
  const raw = env.DATABASE_URL;
  if (raw === undefined || raw === "") return { kind: "pglite", dataDir: resolve(dataDir, "db") };
  if (raw === "memory://") return { kind: "pglite-memory" };
  if (/^postgres(ql)?:\/\//.test(raw)) {
    try {
      new URL(raw);
    } catch {
      throw new ConfigError("DATABASE_URL is not a valid URL.");
    }
    return { kind: "postgres", url: raw };
  }
  throw new ConfigError(
    'DATABASE_URL must be "memory://" or a postgres:// URL (unset for the embedded database).',
  );
}

export function basePathVar(raw: string | undefined): string {
  if (raw === undefined || raw === "" || raw === "/") return "";
  const trimmed = `/${raw.replace(/^\/+|\/+$/g, "")}`;
  if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(trimmed)) {
    throw new ConfigError(`SLIPWAY_BASE_PATH must be a URL path such as /api, got "${raw}".`);
  }
  return trimmed;
}

export function timeoutVars(env: Env): Config["timeouts"] {
  const headersMs = intVar(env, "SLIPWAY_HEADERS_TIMEOUT_MS", 10_000, 100, 600_000);
  const requestMs = intVar(env, "SLIPWAY_REQUEST_TIMEOUT_MS", 300_000, 100, 3_600_000);
  // Node refuses a headers timeout longer than the whole request's.
  if (headersMs > requestMs) {
    throw new ConfigError(
      `SLIPWAY_HEADERS_TIMEOUT_MS (${headersMs}) must not exceed SLIPWAY_REQUEST_TIMEOUT_MS (${requestMs}).`,
    );
  }
  return {
    headersMs,
    requestMs,
    minBodyBytesPerSecond: intVar(env, "SLIPWAY_MIN_BODY_BYTES_PER_SECOND", 1024, 0, 1_000_000_000),
    bodyGraceMs: intVar(env, "SLIPWAY_BODY_GRACE_MS", 10_000, 100, 600_000),
  };
}

/** An image registry as `host[:port][/path]` (a URL's scheme is dropped: image references have none). */
export function registryVar(raw: string | undefined): string | undefined {
  const value = (raw ?? "")
    .trim()
    .replace(/^https?:\/\//, "")
    .replace(/\/+$/, "");
  if (value === "") return undefined;
  if (!/^[A-Za-z0-9.-]+(:\d{1,5})?(\/[a-z0-9._/-]+)?$/.test(value)) {
    throw new ConfigError(
      `SLIPWAY_REGISTRY_URL must be a registry such as registry.example.com:5000 or registry.example.com/team, got "${raw}".`,
    );
  }
  return value;
}

/** An image reference (`[registry/]name[:tag][@digest]`), as FROM takes it. */
export function imageVar(env: Env, name: string, fallback: string): string {
  const raw = (env[name] ?? "").trim() || fallback;
  if (!/^[A-Za-z0-9][A-Za-z0-9._:/-]*(@sha256:[a-f0-9]{64})?$/.test(raw) || raw.includes("//")) {
    throw new ConfigError(
      `${name} must be an image reference such as docker.io/library/node:22, got "${raw}".`,
    );
  }
  return raw;
}

/** Username and password go together: one without the other cannot log in. */
export function registryCredentials(env: Env): { registryUsername?: string; registryPassword?: string } {
  const username = env.SLIPWAY_REGISTRY_USERNAME || undefined;
  const password = env.SLIPWAY_REGISTRY_PASSWORD || undefined;
  if ((username === undefined) !== (password === undefined)) {
    throw new ConfigError("SLIPWAY_REGISTRY_USERNAME and SLIPWAY_REGISTRY_PASSWORD must be set together.");
  }
  if (username !== undefined && /[\s:]/.test(username)) {
    throw new ConfigError("SLIPWAY_REGISTRY_USERNAME must not contain spaces or colons.");
  }
  return { registryUsername: username, registryPassword: password };
}

/**
 * SLIPWAY_REGISTRY_TOKEN_KEY_FILE and _CERT_FILE make Slipway the registry's token server: push
 * tokens become scoped to one repository and expire. The files are read and checked here, once.
 */
export function registryToken(env: Env, registryUrl: string | undefined): RegistryTokenConfig | undefined {
  const keyFile = env.SLIPWAY_REGISTRY_TOKEN_KEY_FILE || undefined;
  const certFile = env.SLIPWAY_REGISTRY_TOKEN_CERT_FILE || undefined;
  if (keyFile === undefined && certFile === undefined) return undefined;
  if (keyFile === undefined || certFile === undefined) {
    throw new ConfigError(
      "SLIPWAY_REGISTRY_TOKEN_KEY_FILE and SLIPWAY_REGISTRY_TOKEN_CERT_FILE must be set together.",
    );
  }
  if (registryUrl === undefined) {
    throw new ConfigError(
      "SLIPWAY_REGISTRY_TOKEN_KEY_FILE needs SLIPWAY_REGISTRY_URL: tokens are for that registry.",
    );
  }
  if (env.SLIPWAY_REGISTRY_USERNAME || env.SLIPWAY_REGISTRY_PASSWORD) {
    throw new ConfigError(
      "SLIPWAY_REGISTRY_USERNAME/PASSWORD and SLIPWAY_REGISTRY_TOKEN_KEY_FILE exclude each other: a registry with token auth takes only Slipway's tokens.",
    );
  }
  const read = (name: string, file: string) => {
    try {
      return readFileSync(file, "utf8");
    } catch (err) {
      throw new ConfigError(
        `${name} cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"}): ${file}`,
      );
    }
  };
  const service = (env.SLIPWAY_REGISTRY_TOKEN_SERVICE ?? "").trim() || "slipway-registry";
  let signer: RegistryTokenSigner;
  try {
    signer = new RegistryTokenSigner(
      read("SLIPWAY_REGISTRY_TOKEN_KEY_FILE", keyFile),
      read("SLIPWAY_REGISTRY_TOKEN_CERT_FILE", certFile),
      service,
    );
  } catch (err) {
    if (err instanceof RegistryTokenError) throw new ConfigError(`SLIPWAY_REGISTRY_TOKEN_*: ${err.message}.`);
    throw err;
  }
  return {
    signer,
    pushTtlS: intVar(env, "SLIPWAY_REGISTRY_PUSH_TOKEN_TTL_S", 900, 60, 86_400),
    pullTtlS: intVar(env, "SLIPWAY_REGISTRY_PULL_TOKEN_TTL_S", 86_400, 600, 2_592_000),
  };
}
