import type { Config, SandboxMode, UidRange } from "../../config.ts";
import type { LocalLimits } from "../build/limits.ts";
import type { PackageIndexes } from "../build/plan/detection.ts";
import type { EngineChoice } from "../engine/finder.ts";
import type { ContainerNetwork } from "./containers/container.ts";
import type { CustomHosts } from "./routing/router.ts";
import type { RuntimeTls } from "./routing/tls.ts";
import type { EgressPolicy, ProtectionOptions } from "./sandbox/confine.ts";

/** How `slipway serve` (reconciler/start.ts) and the tests configure the local runtime; defaults in runtime.ts. */

/** What the runtime reports outside any revision's logs (pino's and Fastify's loggers fit). */
export interface RuntimeLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface LocalRuntimeOptions {
  dataDir: string;
  /** Port of the apps listener; 0 picks a free one (see `appsPort` after `start`). */
  appsPort: number;
  appsDomain: string;
  /** Hosts outside the apps domain and the deployment each serves (verified custom domains). */
  customHosts?: CustomHosts;
  appsHost: string;
  /** How long every process of a revision has to answer its health check. */
  healthTimeoutMs: number;
  /** Upper bound of an app config's `healthcheck_timeout_s` (default 300 s). */
  healthTimeoutMaxMs?: number;
  /** Autoscaling and scale to zero of API processes (docs/local-runtime.md, "Scaling"). */
  scaling?: ScalingOptions;
  logger: RuntimeLogger;
  /** SIGTERM → SIGKILL grace when stopping processes (default 5 s). */
  stopGraceMs?: number;
  /** Longest wait for in-flight requests of a replaced revision (default 30 s). */
  drainTimeoutMs?: number;
  /** First restart delay after a crash, doubled per crash in a row (default 1 s). */
  restartBackoffMs?: number;
  /** Upper bound on processes per revision (default 8): one machine, many apps. */
  maxScale?: number;
  /** Source and build disk limits (defaults: 1 GiB, 100k files, 4096 MB). */
  limits?: Partial<LocalLimits>;
  /** Where builds install packages from (config.packageIndexes); unset: each tool's default. */
  packageIndexes?: PackageIndexes;
  /** Engine for image revisions (default auto: podman, else docker). */
  containerEngine?: EngineChoice;
  /** Network of image revisions (default bridge, the app's port published on loopback). */
  containerNetwork?: ContainerNetwork;
  /** SLIPWAY_SANDBOX: how build commands and app processes are confined (docs/sandbox.md). */
  sandbox: SandboxMode;
  /** SLIPWAY_REDIS_SERVER: the `redis-server` deployments' own Redis runs (default /usr/bin/redis-server). */
  redisServer?: string;
  /** SLIPWAY_APP_UID_RANGE: deployments' own uids when Slipway runs as root (default 200000-265535). */
  uidRange?: UidRange;
  /** SLIPWAY_APP_PIDS_MAX: processes one deployment may run at once, builds included (default 512). */
  pidsMax?: number;
  /** SLIPWAY_APP_EGRESS and SLIPWAY_APP_EGRESS_ALLOW, for apps in their network namespaces (docs/network.md). */
  egress?: EgressPolicy;
  /** SLIPWAY_EDGE: what serves the apps port (routing/edge.ts; default here: the Node edge alone). */
  edge?: Config["apps"]["edge"];
  /** HTTPS on its own port beside the apps port (docs/https.md); unset: plain HTTP only. */
  tls?: RuntimeTls;
  /** Where the protections' tools are (tests simulate missing ones); defaults suit a Debian host. */
  protections?: Omit<ProtectionOptions, "pidsMax">;
}

export interface ScalingOptions {
  /** Wanted in-flight requests per API process (SLIPWAY_AUTOSCALE_TARGET_CONCURRENCY). */
  targetConcurrency?: number;
  /** Stable window of the averages (SLIPWAY_AUTOSCALE_WINDOW_S). */
  windowMs?: number;
  /** How long fewer processes must do before scaling down (SLIPWAY_AUTOSCALE_COOLDOWN_S). */
  cooldownMs?: number;
  /** min_scale 0: idle time before every API process stops (SLIPWAY_IDLE_SCALE_DOWN_S). */
  idleScaleDownMs?: number;
  /** How often the router's traffic and the queue workers' cpu are sampled. */
  tickMs?: number;
  /**
   * Wanted cpu use per queue worker, a share of its cpu limit (else of one core); more, over the
   * stable window, starts another (SLIPWAY_QUEUE_CPU_TARGET, in percent).
   */
  queueCpuTarget?: number;
}

export const DEFAULT_SCALING: Required<ScalingOptions> = {
  targetConcurrency: 10,
  windowMs: 6000,
  cooldownMs: 30_000,
  idleScaleDownMs: 300_000,
  tickMs: 1000,
  queueCpuTarget: 0.7,
};
