import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Config } from "../config.ts";
import { removeDeployment } from "../core/deployments/write-store.ts";
import type { Keyring } from "../crypto/envelope.ts";
import { WORK_CHANNEL } from "../db/channels.ts";
import type { Database, Executor } from "../db/client.ts";
import type { Runtime } from "../runtimes/interface.ts";
import { type ImageBuilder, RemoteRuntime } from "../runtimes/remote/runtime.ts";
import { AppDatabases } from "./app-database.ts";
import { scheduleBackup } from "./backups.ts";
import { type ClaimedRevision, claimRevisions } from "./claims/store.ts";
import type { Job, ReconcilerLogger, ReconcilerLookups, Worker } from "./context.ts";
import { drive } from "./driver.ts";
import { LostClaim } from "./errors.ts";
import { checkHealth, pruneHistory } from "./leader.ts";
import { DEFAULT_LOG_CAP, LogSinks } from "./log-sink.ts";
import { remoteBridge } from "./remote.ts";
import { followOthers, restoreActive } from "./restore.ts";
import { REMOTE_RUNTIME, Runtimes } from "./runtimes.ts";
import type { SourceResolver } from "./sources.ts";
import { claimDeletions, loadWork, lostRevisions, renewLease } from "./store.ts";
import { startTeardown } from "./teardown.ts";
import { recordTraffic } from "./usage.ts";

export interface ReconcilerOptions {
  /**
   * Poll and lease times, the apps' database server, the tenant limits (builds per workspace, build
   * time, log lines per second) and what the parts read (context.ts).
   */
  config: Pick<
    Config,
    "reconciler" | "apps" | "containers" | "auditRetentionDays" | "listeners" | "limits" | "backups"
  >;
  db: Database;
  keyring: Keyring;
  /**
   * The data planes, by the name a revision gives (runtimes.ts `runtimeNameOf`): `local`, and
   * `remote` (listeners), which the reconciler makes itself unless given one.
   */
  runtimes: Readonly<Record<string, Runtime>>;
  /** Builds and pushes images of sources a listener cannot run as they are (when a registry is set). */
  imageBuilder?: ImageBuilder;
  resolveSource: SourceResolver;
  lookups: ReconcilerLookups;
  /** Removes a torn-down deployment's row (the deployments store's, unless a test says otherwise). */
  removeDeployment?: (exec: Executor, id: string) => Promise<unknown>;
  logger?: ReconcilerLogger;
  workerId?: string;
  /** Revisions worked on at once by this process. */
  concurrency?: number;
  logCap?: number;
}

/** Teardowns run at once by this process. */
const MAX_DELETIONS = 4;

const quiet: ReconcilerLogger = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * The control loop: claims revisions and deletions from the database under a lease
 * and hands them to the driver (driver.ts) and teardown (teardown.ts); on start, restores what ran
 * (restore.ts); on each poll, follows other processes and, as leader, checks health (leader.ts).
 * Any number of processes may run one against the same database.
 */
export class Reconciler {
  readonly workerId: string;
  /** Resolves once deployments that were active before a restart are running again. */
  ready: Promise<void> = Promise.resolve();
  private readonly w: Worker;
  private readonly pollMs: number;
  private readonly concurrency: number;
  private readonly restoreAbort = new AbortController();
  private readonly bridge: ReturnType<typeof remoteBridge>;
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private started = false;
  private stopped = false;

  constructor(opts: ReconcilerOptions) {
    const log = opts.logger ?? quiet;
    this.workerId = opts.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.pollMs = opts.config.reconciler.pollMs;
    this.concurrency = opts.concurrency ?? 4;
    const adminUrl = opts.config.apps.databaseUrl;
    this.bridge = remoteBridge(opts.db, opts.config.apps.domain);
    this.w = {
      config: opts.config,
      db: opts.db,
      keyring: opts.keyring,
      runtimes: new Runtimes({
        [REMOTE_RUNTIME]: new RemoteRuntime(this.bridge, opts.imageBuilder),
        ...opts.runtimes,
      }),
      resolveSource: opts.resolveSource,
      lookups: opts.lookups,
      removeDeployment: opts.removeDeployment ?? removeDeployment,
      log,
      workerId: this.workerId,
      leaseMs: opts.config.reconciler.leaseMs,
      listenerTimeoutS: opts.config.listeners.timeoutS,
      appDbs: adminUrl ? new AppDatabases(adminUrl, opts.keyring) : undefined,
      jobs: new Map(),
      served: new Map(),
      lastRequests: new Map(),
      restoring: new Set(),
      deletions: new Map(),
      following: new Map(),
      shutdown: this.restoreAbort.signal,
      sinks: new LogSinks(
        opts.db,
        { cap: opts.logCap ?? DEFAULT_LOG_CAP, linesPerS: opts.config.limits.logLinesPerS },
        (err, revisionId) => log.warn({ err, revisionId }, "storing revision log lines failed"),
      ),
      stopped: () => this.stopped,
      wake: () => this.wake(),
    };
  }

  /** Brings active revisions back, then claims work on every NOTIFY and every poll interval. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.unlisten = await this.w.db.listen(WORK_CHANNEL, () => this.wake());
    this.ready = restoreActive(this.w, this.concurrency).catch((err) => {
      this.w.log.error({ err }, "reconciler: restoring active revisions failed");
    });
    void this.ready.then(() => {
      if (!this.stopped) this.schedulePoll(0);
    });
  }

  /** Looks for work now (new revision, interrupt, deletion). */
  wake(): void {
    if (this.stopped || !this.started) return;
    void this.tick(false);
  }

  /**
   * Stops claiming, aborts what is in progress (its lease is handed back so another process resumes
   * at once) and flushes logs. The runtimes are the caller's to close.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.unlisten?.().catch(() => {});
    this.restoreAbort.abort(new Error("shutting down"));
    await this.ready;
    const { jobs } = this.w;
    for (const job of jobs.values()) job.controller.abort(new Error("shutting down"));
    await Promise.allSettled([...jobs.values()].map((j) => j.done));
    await this.ticking?.catch(() => {});
    await Promise.allSettled(this.w.deletions.values());
    await Promise.allSettled(this.w.following.values());
    await this.bridge.close();
    await this.w.sinks.closeAll();
  }

  private schedulePoll(delay = this.pollMs): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.tick(true).finally(() => this.schedulePoll());
    }, delay);
    this.timer.unref?.();
  }

  /** One pass; passes never overlap (a wake during one runs another right after). */
  private tick(poll: boolean): Promise<void> {
    if (this.ticking) {
      this.again = true;
      return this.ticking;
    }
    this.ticking = (async () => {
      do {
        this.again = false;
        try {
          await this.pass(poll);
        } catch (err) {
          if (!this.stopped) this.w.log.error({ err }, "reconciler pass failed");
        }
        poll = false;
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private async pass(poll: boolean): Promise<void> {
    if (this.stopped) return;
    const { db, jobs, deletions, leaseMs } = this.w;
    // Interrupts and skips written by the API: abort the runtime promptly.
    const lost = await lostRevisions(db.orm, [...jobs.keys()], this.workerId);
    for (const id of lost) jobs.get(id)?.controller.abort(new LostClaim());

    const free = MAX_DELETIONS - deletions.size;
    for (const d of await claimDeletions(db.orm, this.workerId, leaseMs, free)) startTeardown(this.w, d);

    const claimed = await claimRevisions(
      db,
      this.workerId,
      leaseMs,
      this.concurrency - jobs.size,
      this.w.config.limits.buildsPerWorkspace,
    );
    for (const c of claimed) await this.runRevision(c);

    if (poll) {
      await followOthers(this.w);
      await recordTraffic(this.w);
      await checkHealth(this.w);
      await pruneHistory(this.w);
      scheduleBackup(this.w);
    }
  }

  /** Drives a claimed revision while renewing its lease; losing the lease aborts the drive. */
  private async runRevision(claim: ClaimedRevision): Promise<void> {
    const { db, leaseMs, log, jobs } = this.w;
    const work = await loadWork(db.orm, claim.id);
    if (!work) return;
    const controller = new AbortController();
    const renew = setInterval(
      () => {
        renewLease(db.orm, claim.id, this.workerId, leaseMs).then(
          (held) => {
            if (!held) controller.abort(new LostClaim());
          },
          (err) => log.warn({ err, revisionId: claim.id }, "renewing a lease failed"),
        );
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    const done = drive(this.w, work, claim.status, controller.signal)
      .catch((err) => log.error({ err, revisionId: claim.id }, "reconciler job failed"))
      .finally(() => {
        clearInterval(renew);
        jobs.delete(claim.id);
        // A finished revision may unblock a newer one of the same deployment.
        this.wake();
      });
    const job: Job = { deploymentId: work.deploymentId, controller, done };
    jobs.set(claim.id, job);
  }
}
