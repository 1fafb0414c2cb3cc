import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config.ts";
import type { Keyring } from "../crypto/envelope.ts";
import type { Database, Executor, Orm, Reader } from "../db/client.ts";
import type { AppDatabases } from "./app-database.ts";
import type { LogSinks } from "./log-sink.ts";
import type { Runtimes } from "./runtimes.ts";
import type { SourceResolver } from "./sources.ts";

export type ReconcilerLogger = Pick<FastifyBaseLogger, "info" | "warn" | "error">;

/**
 * What the reconciler reads of tables it does not own, handed down at wiring (src/wiring/) so
 * that it imports no resource.
 */
export interface ReconcilerLookups {
  /** The install's first organization, whose apps are trusted (spec.ts). */
  firstOrganizationId(orm: Orm): Promise<string | undefined>;
  /** Whether each listener was heard from within `timeoutS` (leader.ts). */
  listenerLiveness(exec: Reader, timeoutS: number): Promise<{ id: string; connected: boolean }[]>;
}

/** A revision this process works on. */
export interface Job {
  deploymentId: string;
  controller: AbortController;
  done: Promise<void>;
}

/**
 * What the parts of the reconciler (loop, driver, restore, teardown, leader) share: its
 * handles and this process's bookkeeping. The loop (reconciler.ts) owns and fills it.
 */
export interface Worker {
  /**
   * Where secret references are read (spec.ts); UNUSED and audit retention (leader.ts); the build
   * time limit and builds per workspace (driver.ts, claims.ts); scheduled backups (backups.ts).
   */
  readonly config: Pick<Config, "containers" | "reconciler" | "auditRetentionDays" | "limits" | "backups">;
  readonly db: Database;
  readonly keyring: Keyring;
  readonly runtimes: Runtimes;
  readonly resolveSource: SourceResolver;
  readonly lookups: ReconcilerLookups;
  /** Removes a torn-down deployment's row. */
  readonly removeDeployment: (exec: Executor, id: string) => Promise<unknown>;
  readonly log: ReconcilerLogger;
  readonly workerId: string;
  readonly leaseMs: number;
  /** A listener silent this long is DISCONNECTED: its deployments turn UNKNOWN (leader.ts). */
  readonly listenerTimeoutS: number;
  readonly appDbs: AppDatabases | undefined;
  /** Revisions in progress here, by id. */
  readonly jobs: Map<string, Job>;
  /** What this process's runtimes run: deployment → revision (deployed here, or restored at start). */
  readonly served: Map<string, string>;
  /** The newest request time (epoch ms) stored per deployment by this process (usage.ts). */
  readonly lastRequests: Map<string, number>;
  /** Deployments being restored right now (the health check leaves them alone). */
  readonly restoring: Set<string>;
  /** Teardowns in progress here, by deployment. */
  readonly deletions: Map<string, Promise<void>>;
  /** Switches to another process's deploy in progress here, by deployment. */
  readonly following: Map<string, Promise<void>>;
  /** Aborted at shutdown: restores and follows stop. */
  readonly shutdown: AbortSignal;
  readonly sinks: LogSinks;
  stopped(): boolean;
  /** Look for work again soon. */
  wake(): void;
}
