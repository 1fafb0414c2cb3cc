import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import type { BuildRecord } from "../../build/app-config.ts";
import { DeployError, type RevisionSpec } from "../../interface.ts";
import type { Layout } from "../../shared/layout.ts";
import type { ContainerNetwork } from "../containers/container.ts";
import type { ProcessRecord } from "../processes/orphans.ts";
import type { Confiner } from "../sandbox/confine.ts";
import { SANDBOX_APP_DIR } from "../sandbox/sandbox.ts";
import { missingRedis, RedisServer } from "./redis.ts";

/**
 * Whether a revision gets the deployment's own Redis, and bringing it up: the cache group of the
 * resource spec acts here. The server itself is redis.ts; the slot keeps it across revisions.
 */

export interface CacheInput {
  spec: RevisionSpec;
  built: BuildRecord;
  layout: Layout;
  confiner: Confiner;
  network: ContainerNetwork;
  /** Host path of redis-server (SLIPWAY_REDIS_SERVER). */
  binary: string;
  /** The deployment's Redis from an earlier activation, if one runs. */
  current: RedisServer | undefined;
  record: ProcessRecord;
  stopGraceMs: number;
  startTimeoutMs: number;
  log: (line: string) => void;
}

function positive(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : undefined;
}

/** Any `redis_*` field set, or the app config's `"redis": true`. */
export function wantsRedis(resources: Record<string, unknown> | null, built: BuildRecord): boolean {
  const fields = Object.entries(resources ?? {}).some(
    ([k, v]) => k.startsWith("redis_") && v !== null && v !== undefined,
  );
  return fields || (built.kind === "process" && built.redis === true);
}

/**
 * The Redis this revision uses: the running one (with the revision's memory limit applied), a new
 * one started now, or undefined when the revision asks for none. Throws DeployError when it needs
 * one and none can run here.
 */
export async function ensureCache(c: CacheInput): Promise<RedisServer | undefined> {
  const { spec, built, log } = c;
  const resources = spec.resourceSpec ?? {};
  if (!wantsRedis(resources, built)) return undefined;
  if (built.kind === "image" && c.network === "bridge") {
    log(
      "slipway: warning: image revisions get a Redis only with SLIPWAY_CONTAINER_NETWORK=host (it listens on the host's loopback); none is started",
    );
    return undefined;
  }
  const maxMemoryMb = positive(resources.redis_memory_limit_mb);
  const memory = maxMemoryMb === undefined ? "no memory limit" : `maxmemory ${Math.floor(maxMemoryMb)} MB`;
  if (c.current?.running) {
    c.current.adopt(log);
    await c.current.setMaxMemory(maxMemoryMb === undefined ? undefined : Math.floor(maxMemoryMb));
    log(`slipway: the deployment's Redis keeps serving (${memory})`);
    return c.current;
  }
  const missing = await missingRedis(c.binary);
  if (missing !== undefined) throw new DeployError(missing);
  const dir = c.layout.redisDir(spec.deploymentId);
  await mkdir(dir, { recursive: true });
  const confined = await c.confiner.confine(spec.deploymentId, dir, true);
  const server = new RedisServer({
    binary: c.binary,
    wrap: confined.wrap,
    env: confined.env,
    dataDir: confined.sandboxed ? SANDBOX_APP_DIR : dir,
    // Runtimes driven without a reconciler (tests) get one for the server's life.
    password: spec.redisPassword ?? randomBytes(24).toString("hex"),
    maxMemoryMb: maxMemoryMb === undefined ? undefined : Math.floor(maxMemoryMb),
    cpus: positive(resources.redis_cpu_limit),
    record: c.record,
    stopGraceMs: c.stopGraceMs,
    startTimeoutMs: c.startTimeoutMs,
    log,
    host: confined.network?.address,
  });
  log(`slipway: starting the deployment's Redis (${memory})`);
  await server.start();
  log("slipway: Redis is serving; the app gets REDIS_URI");
  return server;
}
