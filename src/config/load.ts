import { resolve } from "node:path";
import { type Config, ConfigError, type LogLevel } from "../config.ts";
import { backupVars } from "./backup.ts";
import { domainVars } from "./domains.ts";
import { edgeVars } from "./edge.ts";
import { tlsVars } from "./tls.ts";
import {
  absolutePathVar,
  basePathVar,
  boolVar,
  choiceVar,
  cidrListVar,
  databaseVar,
  type Env,
  imageVar,
  intVar,
  LOG_LEVELS,
  masterKeyVar,
  registryCredentials,
  registryToken,
  registryVar,
  timeoutVars,
  trustProxyVar,
  uidRangeVar,
  urlVar,
} from "./vars.ts";

/** Parses the whole configuration once; any bad variable stops start-up with a sentence naming it. */
export function loadConfig(env: Env = process.env): Config {
  const dataDir = resolve(env.SLIPWAY_DATA_DIR || "./.slipway");
  const registryUrl = registryVar(env.SLIPWAY_REGISTRY_URL);
  const port = intVar(env, "PORT", 8080, 0, 65535);
  const appsPort = intVar(env, "SLIPWAY_APPS_PORT", 8081, 0, 65535);
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
    metricsPerDeployment: boolVar(env, "SLIPWAY_METRICS_PER_DEPLOYMENT", false),
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
      port: appsPort,
      domain: env.SLIPWAY_APPS_DOMAIN || "localhost",
      databaseUrl: env.SLIPWAY_APPS_DATABASE_URL || undefined,
      healthTimeoutMs: intVar(env, "SLIPWAY_HEALTH_TIMEOUT_MS", 30_000, 100, 600_000),
      redisServer: absolutePathVar(env, "SLIPWAY_REDIS_SERVER", "/usr/bin/redis-server"),
      healthTimeoutMaxMs: intVar(env, "SLIPWAY_HEALTH_TIMEOUT_MAX_S", 300, 1, 3600) * 1000,
      edge: edgeVars(env),
      tls: tlsVars(env, appsPort),
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
    packageIndexes: {
      npm: urlVar(env, "SLIPWAY_NPM_REGISTRY")[0],
      pip: urlVar(env, "SLIPWAY_PIP_INDEX_URL")[0],
      pipExtra: urlVar(env, "SLIPWAY_PIP_EXTRA_INDEX_URL"),
    },
    reconciler: {
      enabled: boolVar(env, "SLIPWAY_RECONCILER", true),
      pollMs: intVar(env, "SLIPWAY_RECONCILER_POLL_MS", 2000, 10, 600_000),
      leaseMs: intVar(env, "SLIPWAY_RECONCILER_LEASE_MS", 30_000, 100, 3_600_000),
      unusedAfterS: intVar(env, "SLIPWAY_UNUSED_AFTER_S", 604_800, 1, 315_360_000),
    },
    webhooks: { allowPrivate: boolVar(env, "SLIPWAY_WEBHOOKS_ALLOW_PRIVATE", false) },
    auditRetentionDays: intVar(env, "SLIPWAY_AUDIT_RETENTION_DAYS", 90, 1, 36_500),
    backups: backupVars(env),
    domains: domainVars(env),
    limits: {
      sourceBytes: intVar(env, "SLIPWAY_SOURCE_LIMIT_BYTES", 1024 ** 3, 1024, 1024 ** 4),
      sourceMaxFiles: intVar(env, "SLIPWAY_SOURCE_MAX_FILES", 100_000, 1, 100_000_000),
      buildDiskBytes: intVar(env, "SLIPWAY_BUILD_DISK_LIMIT_MB", 4096, 1, 1024 * 1024) * 1024 * 1024,
      buildCacheBytes: intVar(env, "SLIPWAY_BUILD_CACHE_MB", 2048, 0, 1024 * 1024) * 1024 * 1024,
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
      buildBaseImagePython: imageVar(
        env,
        "SLIPWAY_BUILD_BASE_IMAGE_PYTHON",
        "docker.io/library/python:3.11-slim-bookworm",
      ),
    },
  };
}
