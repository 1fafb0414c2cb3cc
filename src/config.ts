// Why over 300 lines: every setting is parsed and validated here, once (README "Configuration" lists them).
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { resolve } from "node:path";
import { RegistryTokenError, RegistryTokenSigner } from "./crypto/registry-token.ts";

/** Where the data lives: an embedded PGlite directory, in-memory PGlite, or a PostgreSQL server. */
export type DatabaseTarget =
  | { kind: "pglite"; dataDir: string }
  | { kind: "pglite-memory" }
  | { kind: "postgres"; url: string };

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

export interface Config {
  port: number;
  host: string;
  database: DatabaseTarget;
  dataDir: string;
  bootstrapApiKey: string | undefined;
  /** base64 of 32 bytes; undefined means "use (or generate) the key file in the data dir". */
  masterKey: string | undefined;
  /** Keys that older ciphertexts may still be under; readable, never used to encrypt. */
  previousMasterKeys: string[];
  basePath: string;
  logLevel: LogLevel;
  /** Public URL of this server, used for links it hands out (upload URLs, OAuth callbacks). */
  publicUrl: string;
  bodyLimitBytes: number;
  /** Requests a minute per API key; 0 turns the limit off. */
  rateLimitPerMinute: number;
  /** Failed authentications (401) a minute per client address before 429; 0 turns it off. */
  authFailLimitPerMinute: number;
  /** Bytes of GET answers (deployments, revisions) a process keeps until a change; 0 turns it off. */
  readCacheBytes: number;
  /**
   * Which peers may name the client address in X-Forwarded-For (Fastify `trustProxy`): false (the
   * TCP peer is the client), true (any), or a list of addresses and CIDR ranges of the proxies.
   */
  trustProxy: boolean | string[];
  /** How slow a client may be: all headers within `headersMs`, the whole request within `requestMs`, and a body at `minBodyBytesPerSecond` or faster once `bodyGraceMs` have passed (0: no rate). */
  timeouts: { headersMs: number; requestMs: number; minBodyBytesPerSecond: number; bodyGraceMs: number };
  uploadLimitBytes: number;
  localGitRoots: string[];
  /** Seconds between the local_git poller's looks at branch heads (README "Build on push"); 0 turns it off. */
  localGitPollS: number;
  github: { appId: string | undefined; privateKey: string | undefined; apiUrl: string };
  oauth: { allowInsecureLoopback: boolean; allowPlainPkce: boolean };
  apps: {
    port: number;
    domain: string;
    databaseUrl: string | undefined;
    healthTimeoutMs: number;
    /** Absolute path of the `redis-server` a deployment's own Redis runs. */
    redisServer: string;
    /** Upper bound of an app config's `healthcheck_timeout_s`. */
    healthTimeoutMaxMs: number;
  };
  /** API-process autoscaling and scale to zero of the local runtime (README "Scaling"). */
  scaling: {
    targetConcurrency: number;
    windowMs: number;
    cooldownMs: number;
    idleScaleDownMs: number;
    /** Queue workers' cpu target, a fraction (SLIPWAY_QUEUE_CPU_TARGET is in percent). */
    queueCpuTarget: number;
  };
  containers: {
    engine: "auto" | "podman" | "docker";
    network: "bridge" | "host";
    /** Where `secret_references` resolve: `<dir>/<secret_name>/<secret_key>` (a mounted Secret's layout). */
    secretRefsDir: string | undefined;
  };
  /** How build commands and app processes are confined (README "Sandbox"). */
  sandbox: {
    mode: SandboxMode;
    uidRange: UidRange;
    /** Processes one deployment may run at once, its builds included (SLIPWAY_APP_PIDS_MAX). */
    pidsMax: number;
    /** What apps may reach beyond Slipway's edge and their own services (SLIPWAY_APP_EGRESS). */
    egress: "internet" | "none";
    /** Private ranges apps may reach all the same (SLIPWAY_APP_EGRESS_ALLOW: CIDRs, comma-separated). */
    egressAllow: string[];
    /**
     * Package mirrors builds may always reach, whatever the egress policy (SLIPWAY_NPM_REGISTRY,
     * SLIPWAY_PIP_INDEX_URL, SLIPWAY_PIP_EXTRA_INDEX_URL); empty: npm's own registry.
     */
    mirrors: string[];
  };
  reconciler: {
    enabled: boolean;
    pollMs: number;
    leaseMs: number;
    /** A READY deployment (not prod) that served no request for this long becomes UNUSED. */
    unusedAfterS: number;
  };
  /** Outgoing webhooks: may they reach loopback and private addresses (tests, a private network)? */
  webhooks: { allowPrivate: boolean };
  /** Days the audit log keeps a record (the reconciler leader prunes older ones). */
  auditRetentionDays: number;
  /** What one revision may take on disk: its unpacked source, and its directory while it builds. */
  limits: {
    sourceBytes: number;
    sourceMaxFiles: number;
    buildDiskBytes: number;
    /** How long one build may take before it fails (SLIPWAY_BUILD_TIMEOUT_S). */
    buildTimeoutMs: number;
    /** Builds one workspace may run at once; more wait in a queue fair across workspaces. */
    buildsPerWorkspace: number;
    /** App log lines stored per deployment and second; the rest are counted as dropped. */
    logLinesPerS: number;
  };
  /** Listeners (README "Running on Kubernetes"): silence before DISCONNECTED, and the image registry. */
  listeners: {
    timeoutS: number;
    registryUrl: string | undefined;
    /** Credentials Slipway logs in to the registry with (README "Running on Kubernetes"). */
    registryUsername: string | undefined;
    registryPassword: string | undefined;
    /** Plain http or an unverified certificate (a loopback registry): `--tls-verify=false`. */
    registryInsecure: boolean;
    /** Slipway as the registry's token server (README "Registry token auth"), when configured. */
    registryToken: RegistryTokenConfig | undefined;
    /** What images built for listeners start FROM. */
    buildBaseImage: string;
  };
}

export interface RegistryTokenConfig {
  signer: RegistryTokenSigner;
  /** Lifetime of a push token (POST /v2/deployments/{id}/push-token) and of Slipway's own build logins. */
  pushTtlS: number;
  /** Lifetime of the pull credentials a listener's cluster is given (re-issued at half of it). */
  pullTtlS: number;
}

export type SandboxMode = "auto" | "bwrap" | "none";

/** Host uids (and gids) handed to deployments one each when Slipway runs as root; both ends included. */
export interface UidRange {
  first: number;
  last: number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

const LOG_LEVELS: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}".`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}.`);
  return value;
}

function boolVar(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}".`);
}

function choiceVar<T extends string>(env: Env, name: string, choices: readonly T[]): T {
  const raw = env[name] || "";
  const wanted = raw.trim().toLowerCase() || choices[0];
  const found = choices.find((c) => c === wanted);
  if (found === undefined)
    throw new ConfigError(`${name} must be one of ${choices.join(", ")}, got "${raw}".`);
  return found;
}

/** Highest id usable: 2^32-1 is "no id" to the kernel (chown's -1). */
const MAX_ID = 4_294_967_294;

function absolutePathVar(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  if (!raw.startsWith("/") || raw.includes("\0"))
    throw new ConfigError(`${name} must be an absolute path, got "${raw}".`);
  return raw;
}

function uidRangeVar(env: Env): UidRange {
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
function urlVar(env: Env, name: string): string[] {
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
function cidrListVar(env: Env, name: string): string[] {
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

function trustProxyVar(env: Env): boolean | string[] {
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

function masterKeyVar(name: string, raw: string): string {
  const bytes = Buffer.from(raw, "base64");
  if (bytes.length !== 32 || bytes.toString("base64").replace(/=+$/, "") !== raw.trim().replace(/=+$/, "")) {
    throw new ConfigError(`${name} must be the base64 encoding of exactly 32 bytes.`);
  }
  return bytes.toString("base64");
}

function databaseVar(env: Env, dataDir: string): DatabaseTarget {
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

function basePathVar(raw: string | undefined): string {
  if (raw === undefined || raw === "" || raw === "/") return "";
  const trimmed = `/${raw.replace(/^\/+|\/+$/g, "")}`;
  if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(trimmed)) {
    throw new ConfigError(`SLIPWAY_BASE_PATH must be a URL path such as /api, got "${raw}".`);
  }
  return trimmed;
}

function timeoutVars(env: Env): Config["timeouts"] {
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
function registryVar(raw: string | undefined): string | undefined {
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
function imageVar(env: Env, name: string, fallback: string): string {
  const raw = (env[name] ?? "").trim() || fallback;
  if (!/^[A-Za-z0-9][A-Za-z0-9._:/-]*(@sha256:[a-f0-9]{64})?$/.test(raw) || raw.includes("//")) {
    throw new ConfigError(
      `${name} must be an image reference such as docker.io/library/node:22, got "${raw}".`,
    );
  }
  return raw;
}

/** Username and password go together: one without the other cannot log in. */
function registryCredentials(env: Env): { registryUsername?: string; registryPassword?: string } {
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
function registryToken(env: Env, registryUrl: string | undefined): RegistryTokenConfig | undefined {
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

/** Parses the whole configuration once; any bad variable stops start-up with a sentence naming it. */
export function loadConfig(env: Env = process.env): Config {
  const dataDir = resolve(env.SLIPWAY_DATA_DIR || "./.slipway");
  const registryUrl = registryVar(env.SLIPWAY_REGISTRY_URL);
  const port = intVar(env, "PORT", 8080, 0, 65535);
  const host = env.HOST || "127.0.0.1";
  const logLevel = (env.LOG_LEVEL || "info").toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${env.LOG_LEVEL}".`);
  }
  const bootstrapApiKey = env.SLIPWAY_BOOTSTRAP_API_KEY || undefined;
  if (bootstrapApiKey !== undefined && !/^[A-Za-z0-9_\-.]{16,200}$/.test(bootstrapApiKey)) {
    throw new ConfigError(
      "SLIPWAY_BOOTSTRAP_API_KEY must be 16 to 200 characters of letters, digits, '_', '-' or '.'.",
    );
  }
  const masterKey = env.SLIPWAY_MASTER_KEY
    ? masterKeyVar("SLIPWAY_MASTER_KEY", env.SLIPWAY_MASTER_KEY)
    : undefined;
  const previousMasterKeys = (env.SLIPWAY_PREVIOUS_MASTER_KEYS || "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((k) => masterKeyVar("SLIPWAY_PREVIOUS_MASTER_KEYS", k));
  const basePath = basePathVar(env.SLIPWAY_BASE_PATH);
  const publicUrl = (
    env.SLIPWAY_PUBLIC_URL || `http://${host.includes(":") ? `[${host}]` : host}:${port}`
  ).replace(/\/+$/, "");
  try {
    new URL(publicUrl);
  } catch {
    throw new ConfigError("SLIPWAY_PUBLIC_URL must be an absolute URL.");
  }
  const githubKey = env.SLIPWAY_GITHUB_PRIVATE_KEY?.replace(/\\n/g, "\n") || undefined;
  return {
    port,
    host,
    database: databaseVar(env, dataDir),
    dataDir,
    bootstrapApiKey,
    masterKey,
    previousMasterKeys,
    basePath,
    logLevel,
    publicUrl,
    bodyLimitBytes: intVar(env, "SLIPWAY_BODY_LIMIT_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
    rateLimitPerMinute: intVar(env, "SLIPWAY_RATE_LIMIT_PER_MINUTE", 6000, 0, 100_000_000),
    authFailLimitPerMinute: intVar(env, "SLIPWAY_AUTH_FAIL_LIMIT_PER_MINUTE", 30, 0, 100_000_000),
    readCacheBytes: intVar(env, "SLIPWAY_READ_CACHE_MB", 16, 0, 4096) * 1024 * 1024,
    trustProxy: trustProxyVar(env),
    timeouts: timeoutVars(env),
    uploadLimitBytes: intVar(
      env,
      "SLIPWAY_UPLOAD_LIMIT_BYTES",
      100 * 1024 * 1024,
      1024,
      4 * 1024 * 1024 * 1024,
    ),
    localGitRoots: (env.SLIPWAY_LOCAL_GIT_ROOTS || "")
      .split(":")
      .filter(Boolean)
      .map((p) => resolve(p)),
    localGitPollS: intVar(env, "SLIPWAY_LOCAL_GIT_POLL_S", 5, 0, 86_400),
    github: {
      appId: env.SLIPWAY_GITHUB_APP_ID || undefined,
      privateKey: githubKey,
      apiUrl: (env.SLIPWAY_GITHUB_API_URL || "https://api.github.com").replace(/\/+$/, ""),
    },
    oauth: {
      allowInsecureLoopback: boolVar(env, "SLIPWAY_OAUTH_ALLOW_INSECURE_LOOPBACK", false),
      allowPlainPkce: boolVar(env, "SLIPWAY_OAUTH_ALLOW_PLAIN_PKCE", false),
    },
    apps: {
      port: intVar(env, "SLIPWAY_APPS_PORT", 8081, 0, 65535),
      domain: env.SLIPWAY_APPS_DOMAIN || "localhost",
      databaseUrl: env.SLIPWAY_APPS_DATABASE_URL || undefined,
      healthTimeoutMs: intVar(env, "SLIPWAY_HEALTH_TIMEOUT_MS", 30_000, 100, 600_000),
      redisServer: absolutePathVar(env, "SLIPWAY_REDIS_SERVER", "/usr/bin/redis-server"),
      healthTimeoutMaxMs: intVar(env, "SLIPWAY_HEALTH_TIMEOUT_MAX_S", 300, 1, 3600) * 1000,
    },
    scaling: {
      targetConcurrency: intVar(env, "SLIPWAY_AUTOSCALE_TARGET_CONCURRENCY", 10, 1, 100_000),
      windowMs: intVar(env, "SLIPWAY_AUTOSCALE_WINDOW_S", 6, 1, 3600) * 1000,
      cooldownMs: intVar(env, "SLIPWAY_AUTOSCALE_COOLDOWN_S", 30, 1, 86_400) * 1000,
      idleScaleDownMs: intVar(env, "SLIPWAY_IDLE_SCALE_DOWN_S", 300, 1, 31_536_000) * 1000,
      queueCpuTarget: intVar(env, "SLIPWAY_QUEUE_CPU_TARGET", 70, 1, 100) / 100,
    },
    containers: {
      engine: choiceVar(env, "SLIPWAY_CONTAINER_ENGINE", ["auto", "podman", "docker"] as const),
      network: choiceVar(env, "SLIPWAY_CONTAINER_NETWORK", ["bridge", "host"] as const),
      secretRefsDir: env.SLIPWAY_SECRET_REFS_DIR ? resolve(env.SLIPWAY_SECRET_REFS_DIR) : undefined,
    },
    sandbox: {
      mode: choiceVar(env, "SLIPWAY_SANDBOX", ["auto", "bwrap", "none"] as const),
      uidRange: uidRangeVar(env),
      pidsMax: intVar(env, "SLIPWAY_APP_PIDS_MAX", 512, 16, 1_000_000),
      egress: choiceVar(env, "SLIPWAY_APP_EGRESS", ["internet", "none"] as const),
      egressAllow: cidrListVar(env, "SLIPWAY_APP_EGRESS_ALLOW"),
      mirrors: ["SLIPWAY_NPM_REGISTRY", "SLIPWAY_PIP_INDEX_URL", "SLIPWAY_PIP_EXTRA_INDEX_URL"].flatMap(
        (name) => urlVar(env, name),
      ),
    },
    reconciler: {
      enabled: boolVar(env, "SLIPWAY_RECONCILER", true),
      pollMs: intVar(env, "SLIPWAY_RECONCILER_POLL_MS", 2000, 10, 600_000),
      leaseMs: intVar(env, "SLIPWAY_RECONCILER_LEASE_MS", 30_000, 100, 3_600_000),
      unusedAfterS: intVar(env, "SLIPWAY_UNUSED_AFTER_S", 604_800, 1, 315_360_000),
    },
    webhooks: { allowPrivate: boolVar(env, "SLIPWAY_WEBHOOKS_ALLOW_PRIVATE", false) },
    auditRetentionDays: intVar(env, "SLIPWAY_AUDIT_RETENTION_DAYS", 90, 1, 36_500),
    limits: {
      sourceBytes: intVar(env, "SLIPWAY_SOURCE_LIMIT_BYTES", 1024 ** 3, 1024, 1024 ** 4),
      sourceMaxFiles: intVar(env, "SLIPWAY_SOURCE_MAX_FILES", 100_000, 1, 100_000_000),
      buildDiskBytes: intVar(env, "SLIPWAY_BUILD_DISK_LIMIT_MB", 4096, 1, 1024 * 1024) * 1024 * 1024,
      buildTimeoutMs: intVar(env, "SLIPWAY_BUILD_TIMEOUT_S", 900, 1, 86_400) * 1000,
      buildsPerWorkspace: intVar(env, "SLIPWAY_BUILDS_PER_WORKSPACE", 2, 1, 1000),
      logLinesPerS: intVar(env, "SLIPWAY_LOG_LINES_PER_S", 1000, 1, 1_000_000),
    },
    listeners: {
      timeoutS: intVar(env, "SLIPWAY_LISTENER_TIMEOUT_S", 90, 1, 86_400),
      registryUrl,
      registryUsername: undefined,
      registryPassword: undefined,
      ...registryCredentials(env),
      registryInsecure: boolVar(env, "SLIPWAY_REGISTRY_INSECURE", false),
      registryToken: registryToken(env, registryUrl),
      buildBaseImage: imageVar(env, "SLIPWAY_BUILD_BASE_IMAGE", "docker.io/library/node:22-bookworm-slim"),
    },
  };
}
