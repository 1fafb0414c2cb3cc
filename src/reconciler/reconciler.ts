import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { sql } from "drizzle-orm";
import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config.ts";
import type { Keyring } from "../crypto/envelope.ts";
import { LEADER_LOCK, LOGS_CHANNEL, STATUS_CHANNEL, WORK_CHANNEL } from "../db/channels.ts";
import { type Database, type Executor, rows } from "../db/client.ts";
import {
  assertTransition,
  isTerminal,
  type RevisionStatus,
  statusMessage,
  TERMINAL_REVISION_STATUSES,
} from "../resources/revisions/states.ts";
import type { Activation, PhaseContext, RevisionSpec, Runtime } from "../runtimes/interface.ts";
import { AppDatabases } from "./app-database.ts";
import {
  type ClaimedDeletion,
  type ClaimedRevision,
  claimDeletions,
  claimRevisions,
  deferDeletion,
  lostRevisions,
  releaseLease,
  renewLease,
} from "./claims.ts";
import { failureStatus, isRuntimeFailure, LostClaim, messageOf, phaseFailure } from "./errors.ts";
import { DEFAULT_LOG_CAP, RevisionLogSink } from "./log-sink.ts";
import { resolveSecretReferences } from "./secret-refs.ts";
import type { SourceResolver } from "./sources.ts";
import { MID_WAY, statusList } from "./statuses.ts";
import { moveDeployment, moveRevision } from "./transitions.ts";
import { loadWork, type RevisionWork, revisionSecrets, textField } from "./work.ts";

/** Faults (not failures of the app) retried before the revision is given up as failed. */
const MAX_ATTEMPTS = 3;

export type ReconcilerLogger = Pick<FastifyBaseLogger, "info" | "warn" | "error">;

export interface ReconcilerOptions {
  config: Config;
  db: Database;
  keyring: Keyring;
  runtime: Runtime;
  resolveSource: SourceResolver;
  /** Removes a torn-down deployment's row (the deployments service owns that). */
  removeDeployment: (exec: Executor, id: string) => Promise<unknown>;
  logger?: ReconcilerLogger;
  workerId?: string;
  /** Revisions worked on at once by this process. */
  concurrency?: number;
  logCap?: number;
}

interface Job {
  deploymentId: string;
  controller: AbortController;
  done: Promise<void>;
}

const quiet: ReconcilerLogger = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * The control loop (DESIGN §2): claims revisions and deletions from the database under a lease,
 * drives them through the transitions table with a Runtime, and keeps deployment status honest.
 * Any number of processes may run one against the same database.
 */
export class Reconciler {
  readonly workerId: string;
  /** Resolves once deployments that were active before a restart are running again. */
  ready: Promise<void> = Promise.resolve();
  private readonly opts: ReconcilerOptions;
  private readonly log: ReconcilerLogger;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  private readonly appDbs: AppDatabases | undefined;
  private readonly jobs = new Map<string, Job>();
  private readonly deletions = new Map<string, Promise<void>>();
  private readonly sinks = new Map<string, RevisionLogSink>();
  private readonly restoring = new Set<string>();
  private readonly restoreAbort = new AbortController();
  /** What this process's runtime runs: deployment → revision (deployed here, or restored at start). */
  private readonly served = new Map<string, string>();
  private readonly following = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private started = false;
  private stopped = false;

  constructor(opts: ReconcilerOptions) {
    this.opts = opts;
    this.log = opts.logger ?? quiet;
    this.leaseMs = opts.config.reconciler.leaseMs;
    this.concurrency = opts.concurrency ?? 4;
    this.workerId = opts.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    const adminUrl = opts.config.apps.databaseUrl;
    this.appDbs = adminUrl ? new AppDatabases(adminUrl, opts.keyring) : undefined;
  }

  private get orm() {
    return this.opts.db.orm;
  }

  /** Brings active revisions back, then claims work on every NOTIFY and every poll interval. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.unlisten = await this.opts.db.listen(WORK_CHANNEL, () => this.wake());
    this.ready = this.restoreActive().catch((err) => {
      this.log.error({ err }, "reconciler: restoring active revisions failed");
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
   * at once) and flushes logs. The runtime is the caller's to close.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.unlisten?.().catch(() => {});
    this.restoreAbort.abort(new Error("shutting down"));
    await this.ready;
    for (const job of this.jobs.values()) job.controller.abort(new Error("shutting down"));
    await Promise.allSettled([...this.jobs.values()].map((j) => j.done));
    await this.ticking?.catch(() => {});
    await Promise.allSettled(this.deletions.values());
    await Promise.allSettled(this.following.values());
    await Promise.allSettled([...this.sinks.values()].map((s) => s.close()));
  }

  private schedulePoll(delay = this.opts.config.reconciler.pollMs): void {
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
          if (!this.stopped) this.log.error({ err }, "reconciler pass failed");
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
    // Interrupts and skips written by the API: abort the runtime promptly.
    const lost = await lostRevisions(this.orm, [...this.jobs.keys()], this.workerId);
    for (const id of lost) this.jobs.get(id)?.controller.abort(new LostClaim());

    const deletions = await claimDeletions(this.orm, this.workerId, this.leaseMs, 4 - this.deletions.size);
    for (const d of deletions) this.runDeletion(d);

    const free = this.concurrency - this.jobs.size;
    const claimed = await claimRevisions(this.orm, this.workerId, this.leaseMs, free);
    for (const c of claimed) await this.runRevision(c);

    if (poll) {
      await this.followOthers();
      await this.checkHealth();
    }
  }

  // ── revisions ──────────────────────────────────────────────────────────────────────────────

  private sinkFor(revisionId: string, secrets: Iterable<string>): RevisionLogSink {
    let sink = this.sinks.get(revisionId);
    if (sink) {
      sink.setSecrets(secrets);
      return sink;
    }
    sink = new RevisionLogSink(
      this.opts.db,
      revisionId,
      secrets,
      this.opts.logCap ?? DEFAULT_LOG_CAP,
      (err) => this.log.warn({ err, revisionId }, "storing revision log lines failed"),
    );
    this.sinks.set(revisionId, sink);
    return sink;
  }

  private async runRevision(claim: ClaimedRevision): Promise<void> {
    const work = await loadWork(this.orm, claim.id);
    if (!work) return;
    const controller = new AbortController();
    const renew = setInterval(
      () => {
        renewLease(this.orm, claim.id, this.workerId, this.leaseMs).then(
          (held) => {
            if (!held) controller.abort(new LostClaim());
          },
          (err) => this.log.warn({ err, revisionId: claim.id }, "renewing a lease failed"),
        );
      },
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    const done = this.drive(work, claim.status, controller.signal)
      .catch((err) => this.log.error({ err, revisionId: claim.id }, "reconciler job failed"))
      .finally(() => {
        clearInterval(renew);
        this.jobs.delete(claim.id);
        // A finished revision may unblock a newer one of the same deployment.
        this.wake();
      });
    this.jobs.set(claim.id, { deploymentId: work.deploymentId, controller, done });
  }

  private async notifyStatus(revisionId: string): Promise<void> {
    await this.opts.db.notify(STATUS_CHANNEL, revisionId).catch(() => {});
    await this.opts.db.notify(LOGS_CHANNEL, revisionId).catch(() => {});
  }

  /** Runs one claimed revision from where it is to a terminal status (or until it is taken away). */
  private async drive(work: RevisionWork, claimed: RevisionStatus, signal: AbortSignal): Promise<void> {
    const { runtime } = this.opts;
    let status = claimed;
    const sink = this.sinkFor(work.id, []);
    const ctx: PhaseContext = { log: (stream, line) => sink.log(stream, line), signal };
    const step = async (to: RevisionStatus, message?: string) => {
      if (signal.aborted) throw new LostClaim();
      // A follower of the log stops at a terminal status: every line must be stored before it.
      if (isTerminal(to)) await sink.flush();
      const moved = await moveRevision(this.orm, {
        id: work.id,
        from: status,
        to,
        owner: this.workerId,
        leaseMs: this.leaseMs,
        message: message === undefined ? undefined : sink.redactLine(message),
      });
      if (!moved) throw new LostClaim();
      status = to;
      await this.notifyStatus(work.id);
    };

    try {
      const secrets = await revisionSecrets(this.orm, this.opts.keyring, work.id);
      sink.setSecrets(Object.values(secrets));
      if (MID_WAY.has(status)) {
        sink.log(
          "build",
          `Slipway: the worker that had this revision stopped; starting again from the source.`,
        );
        await step("UNKNOWN", "the previous worker stopped; restarting");
        await runtime.discard(work.deploymentId, work.id);
      }
      const env: Record<string, string> = { ...secrets };
      const hidden = Object.values(secrets);
      const db = await this.ensureDatabase(work);
      if (db) {
        env.DATABASE_URI = db.uri;
        env.POSTGRES_URI = db.uri;
        hidden.push(db.password);
        sink.setSecrets(hidden);
      }
      if (status === "QUEUED" || status === "UNKNOWN") await step("AWAITING_BUILD");
      if (await this.newerRevisionWaiting(work)) {
        sink.log("build", "Slipway: a newer revision was queued before this one started building.");
        await step("SKIPPED", "a newer revision was queued");
        await sink.flush();
        return;
      }
      const spec = await this.specFor(work, env);
      sink.log("build", `Slipway: fetching the source (${work.source}).`);
      const prepared = await runtime.prepare(spec, ctx);
      if (prepared.commitSha) await this.recordCommit(work.id, prepared.commitSha);
      await step("BUILDING");
      await runtime.build(spec, ctx);
      await step("AWAITING_DEPLOY");
      await step("DEPLOYING");
      // Read now, so a missing reference fails the deploy (and a changed file counts at each deploy).
      const referenced = await this.referencedSecrets(work);
      Object.assign(spec.env, referenced);
      sink.setSecrets([...hidden, ...Object.values(referenced)]);
      const activation = await runtime.activate(spec, ctx);
      await sink.flush();
      if (!(await this.finishDeploy(work, activation))) {
        await this.undoActivation(work);
        throw new LostClaim();
      }
      status = "DEPLOYED";
      this.served.set(work.deploymentId, work.id);
      await this.notifyStatus(work.id);
      sink.log("deploy", `Slipway: serving at ${activation.url}.`);
      const previous = work.activeRevisionId;
      if (previous && previous !== work.id) {
        await runtime.discard(work.deploymentId, previous);
        await this.sinks.get(previous)?.close();
        this.sinks.delete(previous);
      }
    } catch (err) {
      if (signal.aborted || err instanceof LostClaim) {
        await this.stopped_(work, sink);
      } else if (isRuntimeFailure(err)) {
        await this.fail(work, status, failureStatus(err, status), messageOf(err), sink);
      } else {
        await this.fault(work, status, err, sink);
      }
    } finally {
      await sink.flush();
    }
  }

  /** The claim ended under us: an interrupt or skip (clean up), or a shutdown (hand the lease back). */
  private async stopped_(work: RevisionWork, sink: RevisionLogSink): Promise<void> {
    const [row] = await rows<{ status: RevisionStatus; lease_owner: string | null }>(
      this.orm,
      sql`SELECT status, lease_owner FROM revisions WHERE id = ${work.id}`,
    );
    if (row && isTerminal(row.status)) {
      sink.log("build", `Slipway: stopped (${row.status}).`);
      if (row.status !== "DEPLOYED") await this.discard(work);
    }
    // Last: a released lease tells a deletion waiting on this revision that it may proceed.
    await releaseLease(this.orm, work.id, this.workerId);
  }

  /** Removes a revision's files; a failure here must not keep the revision from its status. */
  private async discard(work: RevisionWork): Promise<void> {
    await this.opts.runtime.discard(work.deploymentId, work.id).catch((err) => {
      this.log.warn({ err, revisionId: work.id }, "removing a revision's files failed");
    });
  }

  private async fail(
    work: RevisionWork,
    from: RevisionStatus,
    to: RevisionStatus,
    message: string,
    sink: RevisionLogSink,
  ): Promise<void> {
    sink.log(to === "DEPLOY_FAILED" ? "deploy" : "build", `Slipway: ${to}: ${message}`);
    await sink.flush();
    // Files first: once the status says failed, nothing but its logs is left.
    await this.discard(work);
    const moved = await moveRevision(this.orm, {
      id: work.id,
      from,
      to,
      owner: this.workerId,
      leaseMs: this.leaseMs,
      message: sink.redactLine(message),
    });
    if (moved) await this.notifyStatus(work.id);
    else await releaseLease(this.orm, work.id, this.workerId);
  }

  /** A fault of ours or of the platform: UNKNOWN, retried with back-off, failed after a few tries. */
  private async fault(
    work: RevisionWork,
    from: RevisionStatus,
    err: unknown,
    sink: RevisionLogSink,
  ): Promise<void> {
    const attempts = work.attempts + 1;
    this.log.warn({ err, revisionId: work.id, attempts }, "reconciler fault");
    await this.orm.execute(sql`UPDATE revisions SET attempts = ${attempts} WHERE id = ${work.id}`);
    if (attempts >= MAX_ATTEMPTS) {
      const to = phaseFailure(from);
      await this.fail(work, from, to, `gave up after ${attempts} faults: ${messageOf(err)}`, sink);
      return;
    }
    sink.log("build", `Slipway: fault (${messageOf(err)}); retrying.`);
    let moved = from === "UNKNOWN";
    if (!moved) {
      moved = await moveRevision(this.orm, {
        id: work.id,
        from,
        to: "UNKNOWN",
        owner: this.workerId,
        leaseMs: this.leaseMs,
        message: sink.redactLine(messageOf(err)),
      });
    }
    await releaseLease(this.orm, work.id, this.workerId, moved ? Math.min(250 * 2 ** attempts, 10_000) : 0);
    if (moved) await this.notifyStatus(work.id);
  }

  private async newerRevisionWaiting(work: RevisionWork): Promise<boolean> {
    const found = await rows<{ id: string }>(
      this.orm,
      sql`SELECT id FROM revisions WHERE deployment_id = ${work.deploymentId} AND seq > ${work.seq}
             AND status IN (${statusList(["QUEUED", "AWAITING_BUILD"])}) LIMIT 1`,
    );
    return found.length > 0;
  }

  private async recordCommit(revisionId: string, sha: string): Promise<void> {
    await this.orm.execute(
      sql`UPDATE revisions
             SET source_revision_config = jsonb_set(source_revision_config, '{repo_commit_sha}', to_jsonb(${sha}::text)),
                 updated_at = now()
           WHERE id = ${revisionId}`,
    );
  }

  /** DEPLOYED and the deployment's active revision and URL, in one transaction. */
  private async finishDeploy(work: RevisionWork, activation: Activation): Promise<boolean> {
    return this.orm.transaction(async (tx) => {
      const moved = await moveRevision(tx, {
        id: work.id,
        from: "DEPLOYING",
        to: "DEPLOYED",
        owner: this.workerId,
        leaseMs: this.leaseMs,
      });
      if (!moved) return false;
      await tx.execute(
        sql`UPDATE deployments
               SET active_revision_id = ${work.id},
                   source_config = jsonb_set(source_config, '{custom_url}', to_jsonb(${activation.url}::text)),
                   updated_at = now()
             WHERE id = ${work.deploymentId}`,
      );
      // An image revision names the deployed image's version; other sources leave it as it was.
      if (activation.imageVersion !== undefined) {
        await tx.execute(
          sql`UPDATE deployments SET image_version = ${activation.imageVersion} WHERE id = ${work.deploymentId}`,
        );
      }
      return true;
    });
  }

  /** The revision was interrupted after traffic switched to it: put the active one back. */
  private async undoActivation(work: RevisionWork): Promise<void> {
    const [row] = await rows<{ active_revision_id: string | null }>(
      this.orm,
      sql`SELECT active_revision_id FROM deployments WHERE id = ${work.deploymentId}`,
    );
    const previous = row?.active_revision_id;
    if (previous) {
      await this.activateExisting(previous);
    } else {
      await this.opts.runtime.teardown(work.deploymentId);
    }
  }

  private async specFor(work: RevisionWork, env: Record<string, string>): Promise<RevisionSpec> {
    const cfg = work.sourceRevisionConfig;
    return {
      deploymentId: work.deploymentId,
      deploymentName: work.deploymentName,
      revisionId: work.id,
      source: await this.opts.resolveSource(work),
      // Built-in templates ship their app config as slipway.json.
      frameworkConfigPath:
        textField(cfg, "framework_config_path") ??
        (work.source === "internal_template" ? "slipway.json" : undefined),
      installCommand: textField(work.buildConfig, "install_command"),
      buildCommand: textField(work.buildConfig, "build_command"),
      resourceSpec: work.resourceSpec,
      env,
    };
  }

  /** Provisions the deployment's database (when configured) and makes a new deployment READY. */
  private async ensureDatabase(work: RevisionWork) {
    const db = this.appDbs ? await this.appDbs.provision(this.orm, work.deploymentId) : undefined;
    if (work.deploymentStatus === "AWAITING_DATABASE") {
      await moveDeployment(this.orm, work.deploymentId, "AWAITING_DATABASE", "READY");
    }
    return db;
  }

  private referencedSecrets(work: RevisionWork): Promise<Record<string, string>> {
    return resolveSecretReferences(this.opts.config.containers.secretRefsDir, work.secretReferences);
  }

  private async envFor(work: RevisionWork): Promise<{ env: Record<string, string>; secrets: string[] }> {
    const env = await revisionSecrets(this.orm, this.opts.keyring, work.id);
    Object.assign(env, await this.referencedSecrets(work));
    const secrets = Object.values(env);
    if (this.appDbs) {
      const db = await this.appDbs.provision(this.orm, work.deploymentId);
      env.DATABASE_URI = db.uri;
      env.POSTGRES_URI = db.uri;
      secrets.push(db.password);
    }
    return { env, secrets };
  }

  /**
   * Runs an already-DEPLOYED revision again (after a restart, or to undo an interrupted switch):
   * without a rebuild when its build output is still there. Its status does not change.
   */
  private async activateExisting(revisionId: string, signal = new AbortController().signal): Promise<void> {
    const work = await loadWork(this.orm, revisionId);
    if (!work) return;
    const { env, secrets } = await this.envFor(work);
    const sink = this.sinkFor(work.id, secrets);
    const ctx: PhaseContext = { log: (stream, line) => sink.log(stream, line), signal };
    const spec = await this.specFor(work, env);
    const commit = textField(work.sourceRevisionConfig, "repo_commit_sha");
    if (spec.source.kind === "git" && commit) spec.source = { ...spec.source, commitSha: commit };
    const { runtime } = this.opts;
    if (!(await runtime.isBuilt(spec))) {
      sink.log("build", "Slipway: the build output is gone; building this revision again.");
      await runtime.prepare(spec, ctx);
      await runtime.build(spec, ctx);
    }
    const activation = await runtime.activate(spec, ctx);
    sink.log("deploy", `Slipway: serving at ${activation.url}.`);
    await sink.flush();
  }

  /** On start: every deployment's active revision runs again before new work is claimed. */
  private async restoreActive(): Promise<void> {
    const active = await rows<{ id: string; status: string; active_revision_id: string }>(
      this.orm,
      sql`SELECT id, status, active_revision_id FROM deployments
           WHERE active_revision_id IS NOT NULL AND status <> 'AWAITING_DELETE'`,
    );
    const queue = [...active];
    const worker = async () => {
      for (let d = queue.shift(); d; d = queue.shift()) {
        if (this.stopped) return;
        this.restoring.add(d.id);
        try {
          await this.activateExisting(d.active_revision_id, this.restoreAbort.signal);
          this.served.set(d.id, d.active_revision_id);
          if (d.status === "UNKNOWN") await moveDeployment(this.orm, d.id, "UNKNOWN", "READY");
        } catch (err) {
          if (this.stopped) return;
          this.log.error({ err, deploymentId: d.id }, "reconciler: could not restart an active revision");
          this.sinks.get(d.active_revision_id)?.log("deploy", `Slipway: restart failed: ${messageOf(err)}`);
          if (d.status === "READY") await moveDeployment(this.orm, d.id, "READY", "UNKNOWN").catch(() => {});
        } finally {
          this.restoring.delete(d.id);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, queue.length) }, worker));
  }

  // ── deployments ────────────────────────────────────────────────────────────────────────────

  private runDeletion(d: ClaimedDeletion): void {
    const done = this.teardown(d)
      .catch(async (err) => {
        this.log.error({ err, deploymentId: d.id }, "reconciler: teardown failed; retrying");
        await deferDeletion(this.orm, d.id, this.workerId, 2000).catch(() => {});
      })
      .finally(() => this.deletions.delete(d.id));
    this.deletions.set(d.id, done);
  }

  /** AWAITING_DELETE → revisions stopped, processes and files gone, database dropped → row removed. */
  private async teardown(d: ClaimedDeletion): Promise<void> {
    const pending = await rows<{ id: string; status: RevisionStatus }>(
      this.orm,
      sql`SELECT id, status FROM revisions WHERE deployment_id = ${d.id} AND status NOT IN (${statusList([...TERMINAL_REVISION_STATUSES])})`,
    );
    for (const r of pending)
      await interruptRevision(this.orm, r.id, r.status, "the deployment is being deleted");
    for (const job of this.jobs.values()) {
      if (job.deploymentId === d.id) job.controller.abort(new LostClaim());
    }
    // A worker (here or elsewhere) still winding down one of its revisions: come back shortly.
    const busy = await rows<{ id: string }>(
      this.orm,
      sql`SELECT id FROM revisions WHERE deployment_id = ${d.id} AND lease_owner IS NOT NULL
             AND lease_expires_at > now() LIMIT 1`,
    );
    if (busy.length > 0) {
      await deferDeletion(this.orm, d.id, this.workerId, 200);
      setTimeout(() => this.wake(), 250).unref?.();
      return;
    }
    await this.opts.runtime.teardown(d.id);
    this.served.delete(d.id);
    if (this.appDbs) await this.appDbs.drop(d.id);
    const revs = await rows<{ id: string }>(
      this.orm,
      sql`SELECT id FROM revisions WHERE deployment_id = ${d.id}`,
    );
    for (const r of revs) {
      await this.sinks.get(r.id)?.close();
      this.sinks.delete(r.id);
    }
    await this.opts.removeDeployment(this.orm, d.id);
    this.log.info({ deploymentId: d.id }, "reconciler: deployment torn down and removed");
  }

  /**
   * Keeps what this process runs in line with what other processes decided, for deployments it
   * also runs (both restored them at start): a newer active revision is switched to here too
   * (rebuilt when its build is not on this machine), and a removed deployment is stopped here too.
   */
  private async followOthers(): Promise<void> {
    if (this.served.size === 0) return;
    const ids = [...this.served.keys()];
    const current = await rows<{ id: string; status: string; active_revision_id: string | null }>(
      this.orm,
      sql`SELECT id, status, active_revision_id FROM deployments WHERE id IN (${sql.join(
        ids.map((id) => sql`${id}::uuid`),
        sql`, `,
      )})`,
    );
    const byId = new Map(current.map((r) => [r.id, r]));
    const busy = new Set([...this.jobs.values()].map((j) => j.deploymentId));
    for (const id of ids) {
      if (this.deletions.has(id) || this.following.has(id) || busy.has(id)) continue;
      const row = byId.get(id);
      if (!row) {
        await this.opts.runtime.teardown(id);
        this.served.delete(id);
        this.log.info({ deploymentId: id }, "reconciler: stopped a deployment removed by another process");
        continue;
      }
      // AWAITING_DELETE: whoever claims it tears it down (here too, if this process does).
      const active = row.active_revision_id;
      if (row.status === "AWAITING_DELETE" || !active || active === this.served.get(id)) continue;
      const done = this.activateExisting(active, this.restoreAbort.signal)
        .then(() => {
          this.served.set(id, active);
          this.log.info(
            { deploymentId: id, revisionId: active },
            "reconciler: switched to another process's deploy",
          );
        })
        .catch((err) =>
          this.log.warn({ err, deploymentId: id }, "reconciler: could not follow a new active revision"),
        )
        .finally(() => this.following.delete(id));
      this.following.set(id, done);
    }
  }

  /** Leader only: deployments whose runtime cannot report become UNKNOWN, and READY again when it can. */
  private async checkHealth(): Promise<void> {
    await this.orm.transaction(async (tx) => {
      const [lock] = await rows<{ ok: boolean }>(
        tx,
        sql`SELECT pg_try_advisory_xact_lock(${LEADER_LOCK}) AS ok`,
      );
      if (!lock?.ok) return;
      const active = await rows<{ id: string; status: "READY" | "UNKNOWN" }>(
        tx,
        sql`SELECT id, status FROM deployments
             WHERE active_revision_id IS NOT NULL AND status IN ('READY', 'UNKNOWN')`,
      );
      for (const d of active) {
        if (this.restoring.has(d.id)) continue;
        const health = this.opts.runtime.health(d.id);
        if (health === "unknown" && d.status === "READY") await moveDeployment(tx, d.id, "READY", "UNKNOWN");
        if (health === "running" && d.status === "UNKNOWN")
          await moveDeployment(tx, d.id, "UNKNOWN", "READY");
      }
    });
  }
}

/** INTERRUPTED through the transitions table, conditional on the status read. */
async function interruptRevision(
  exec: Executor,
  id: string,
  from: RevisionStatus,
  message: string,
): Promise<void> {
  if (isTerminal(from)) return;
  assertTransition(from, "INTERRUPTED");
  const entry = JSON.stringify([{ status: "INTERRUPTED", at: new Date().toISOString(), message }]);
  await exec.execute(
    sql`UPDATE revisions
           SET status = 'INTERRUPTED', interrupt_requested = true,
               status_message = ${statusMessage("INTERRUPTED", message)},
               status_history = status_history || ${entry}::jsonb, updated_at = now()
         WHERE id = ${id} AND status = ${from}`,
  );
}
