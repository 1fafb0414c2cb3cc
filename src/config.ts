// The settings, as the rest of Slipway reads them: parsed once by config/load.ts from the
// environment (docs/configuration.md lists every variable), with config/vars.ts checking each.

import type { RegistryTokenSigner } from "./crypto/registry-token.ts";

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
   * SLIPWAY_METRICS_PER_DEPLOYMENT: the apps edge's per-deployment metrics in `/metrics`, which then
   * needs a system key (deployment names are tenants' data).
   */
  metricsPerDeployment: boolean;
  /**
   * Which peers may name the client address in X-Forwarded-For (Fastify `trustProxy`): false (the
   * TCP peer is the client), true (any), or a list of addresses and CIDR ranges of the proxies.
   */
  trustProxy: boolean | string[];
  /** How slow a client may be: all headers within `headersMs`, the whole request within `requestMs`, and a body at `minBodyBytesPerSecond` or faster once `bodyGraceMs` have passed (0: no rate). */
  timeouts: { headersMs: number; requestMs: number; minBodyBytesPerSecond: number; bodyGraceMs: number };
  uploadLimitBytes: number;
  localGitRoots: string[];
  /** Seconds between the local_git poller's looks at branch heads (docs/codehost.md, "Build on push"); 0 turns it off. */
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
    /** What serves the apps port (config/edge.ts, docs/edge.md). */
    edge: {
      kind: "auto" | "node" | "haproxy";
      /** SLIPWAY_EDGE_HAPROXY: the haproxy binary. */
      haproxy: string;
      /** SLIPWAY_EDGE_THREADS: HAProxy's nbthread (`auto`: one a core). */
      threads: string;
    };
    /** HTTPS on the apps listener (config/tls.ts, docs/https.md). */
    tls: {
      mode: "off" | "internal" | "acme" | "files";
      /** SLIPWAY_APPS_TLS_PORT; 0 picks a free one. */
      port: number;
      /** The ACME server's directory, the PEM bundle trusted for it (its content), the account's contact. */
      acme: { directoryUrl: string | undefined; ca: string | undefined; email: string | undefined };
      /** files mode: the directory of `<host>.crt` and `<host>.key`. */
      dir: string | undefined;
      /** How often certificates are looked over (renewals, retries); the first retry's pause. */
      checkEveryMs: number;
      /** How long a client has to finish its TLS handshake. */
      handshakeTimeoutMs: number;
    };
  };
  /** API-process autoscaling and scale to zero of the local runtime (docs/local-runtime.md, "Scaling"). */
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
  /** How build commands and app processes are confined (docs/sandbox.md). */
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
  /**
   * The package indexes builds install from, local and image (SLIPWAY_NPM_REGISTRY,
   * SLIPWAY_PIP_INDEX_URL, SLIPWAY_PIP_EXTRA_INDEX_URL); unset: each tool's own default.
   */
  packageIndexes: { npm?: string; pip?: string; pipExtra: string[] };
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
  /** Scheduled backups taken by the reconciler's leader (config/backup.ts); off without `dir`. */
  backups: { dir: string | undefined; everyMs: number; keep: number };
  /**
   * Custom domains (config/domains.ts): the DNS server verification asks (`host:port`; unset: the
   * system's), and the first pause between checks of a pending domain (doubled per failure, up to 1 h).
   */
  domains: { dnsResolver: string | undefined; checkEveryMs: number };
  /** What one revision may take on disk: its unpacked source, and its directory while it builds. */
  limits: {
    sourceBytes: number;
    sourceMaxFiles: number;
    buildDiskBytes: number;
    /** One deployment's dependency cache, reused by builds with the same lockfile (SLIPWAY_BUILD_CACHE_MB). */
    buildCacheBytes: number;
    /** How long one build may take before it fails (SLIPWAY_BUILD_TIMEOUT_S). */
    buildTimeoutMs: number;
    /** Builds one workspace may run at once; more wait in a queue fair across workspaces. */
    buildsPerWorkspace: number;
    /** App log lines stored per deployment and second; the rest are counted as dropped. */
    logLinesPerS: number;
  };
  /** Listeners (docs/kubernetes.md): silence before DISCONNECTED, and the image registry. */
  listeners: {
    timeoutS: number;
    registryUrl: string | undefined;
    /** Credentials Slipway logs in to the registry with (docs/kubernetes.md). */
    registryUsername: string | undefined;
    registryPassword: string | undefined;
    /** Plain http or an unverified certificate (a loopback registry): `--tls-verify=false`. */
    registryInsecure: boolean;
    /** Slipway as the registry's token server (docs/registry.md), when configured. */
    registryToken: RegistryTokenConfig | undefined;
    /** What images built for listeners start FROM (Node apps, static sites and the rest). */
    buildBaseImage: string;
    /** What images built for listeners from Python sources start FROM. */
    buildBaseImagePython: string;
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
