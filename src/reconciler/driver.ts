import { activateRevision } from "../core/deployments/runtime-store.ts";
import { moveDeployment, recordLatestCommit } from "../core/deployments/write-store.ts";
import { newerRevisionWaiting, revisionStatus } from "../core/revisions/read-store.ts";
import { isTerminal, MID_WAY, type RevisionStatus } from "../core/revisions/states.ts";
import { writeRevisionStatus } from "../core/revisions/status-store.ts";
import { recordCommit, setAttempts } from "../core/revisions/write-store.ts";
import { LOGS_CHANNEL, STATUS_CHANNEL, WORK_CHANNEL } from "../db/channels.ts";
import type { Executor } from "../db/client.ts";
import type { Activation, PhaseContext } from "../runtimes/interface.ts";
import { buildWithin } from "./build-limit.ts";
import type { Worker } from "./context.ts";
import { failureStatus, isRuntimeFailure, LostClaim, messageOf, phaseFailure } from "./errors.ts";
import type { RevisionLogSink } from "./log-sink.ts";
import { activateExisting } from "./restore.ts";
import { redisPassword, referencedSecrets, revisionSecrets, specFor } from "./spec.ts";
import { activeRevisionOf, releaseLease } from "./store.ts";
import type { RevisionWork } from "./work.ts";

/** Faults (not failures of the app) retried before the revision is given up as failed. */
const MAX_ATTEMPTS = 3;

/** A status move by the worker holding the lease: false when the lease or status changed under it. */
async function moveRevision(
  w: Worker,
  exec: Executor,
  id: string,
  from: RevisionStatus,
  to: RevisionStatus,
  message?: string,
): Promise<boolean> {
  const lease = { owner: w.workerId, leaseMs: w.leaseMs };
  return (await writeRevisionStatus(exec, { revisionId: id }, { from: [from], to, message, lease })) === 1;
}

async function notifyStatus(w: Worker, revisionId: string): Promise<void> {
  await w.db.notify(STATUS_CHANNEL, revisionId).catch(() => {});
  await w.db.notify(LOGS_CHANNEL, revisionId).catch(() => {});
}

/** Runs one claimed revision from where it is to a terminal status (or until it is taken away). */
export async function drive(
  w: Worker,
  work: RevisionWork,
  claimed: RevisionStatus,
  signal: AbortSignal,
): Promise<void> {
  const runtime = w.runtimes.of(work.runtime);
  let status = claimed;
  const sink = w.sinks.for(work.id, [], work.deploymentId);
  // What the runtime passes on (the build's and the app's output) is held to the log budget.
  const ctx: PhaseContext = { log: (stream, line) => sink.ingest(stream, line), signal };
  const step = async (to: RevisionStatus, message?: string) => {
    if (signal.aborted) throw new LostClaim();
    // A follower of the log stops at a terminal status: every line must be stored before it.
    if (isTerminal(to)) await sink.flush();
    const redacted = message === undefined ? undefined : sink.redactLine(message);
    if (!(await moveRevision(w, w.db.orm, work.id, status, to, redacted))) throw new LostClaim();
    status = to;
    await notifyStatus(w, work.id);
  };

  try {
    const secrets = await revisionSecrets(w, work.id);
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
    const db = await ensureDatabase(w, work, runtime.remote === true);
    if (db) {
      env.DATABASE_URI = db.uri;
      env.POSTGRES_URI = db.uri;
      hidden.push(db.password);
    }
    const redis = await redisPassword(w, work.deploymentId);
    hidden.push(redis);
    sink.setSecrets(hidden);
    if (status === "QUEUED" || status === "UNKNOWN") await step("AWAITING_BUILD");
    if (await newerRevisionWaiting(w.db.orm, work.deploymentId, work.seq)) {
      sink.log("build", "Slipway: a newer revision was queued before this one started building.");
      await step("SKIPPED", "a newer revision was queued");
      await sink.flush();
      return;
    }
    const spec = await specFor(w, work, env);
    spec.redisPassword = redis;
    sink.log("build", `Slipway: fetching the source (${work.source}).`);
    const prepared = await runtime.prepare(spec, ctx);
    const sha = prepared.commitSha;
    if (sha) {
      // The revision's config and, when it is the latest, its deployment's record show the commit.
      await w.db.orm.transaction(async (tx) => {
        await recordCommit(tx, work.id, sha);
        await recordLatestCommit(tx, work.id, sha);
      });
    }
    await step("BUILDING");
    await buildWithin(runtime, spec, ctx, w.config.limits.buildTimeoutMs, (err) =>
      sink.log("build", `Slipway: ${err.message}; stopping it.`),
    );
    await step("AWAITING_DEPLOY");
    // The workspace's build slot is free again (claims.ts): its next build may start now, here or
    // in another process.
    await w.db.notify(WORK_CHANNEL, work.id).catch(() => {});
    await step("DEPLOYING");
    // Read now, so a missing reference fails the deploy (and a changed file counts at each deploy).
    const referenced = runtime.remote ? {} : await referencedSecrets(w, work);
    Object.assign(spec.env, referenced);
    sink.setSecrets([...hidden, ...Object.values(referenced)]);
    const activation = await runtime.activate(spec, ctx);
    await sink.flush();
    if (!(await finishDeploy(w, work, activation))) {
      await undoActivation(w, work);
      throw new LostClaim();
    }
    status = "DEPLOYED";
    w.served.set(work.deploymentId, work.id);
    await notifyStatus(w, work.id);
    sink.log("deploy", `Slipway: serving at ${activation.url}.`);
    const previous = work.activeRevisionId;
    if (previous && previous !== work.id) {
      await runtime.discard(work.deploymentId, previous);
      await w.sinks.close(previous);
    }
  } catch (err) {
    if (signal.aborted || err instanceof LostClaim) {
      await claimEnded(w, work, sink);
    } else if (isRuntimeFailure(err)) {
      await fail(w, work, status, failureStatus(err, status), messageOf(err), sink);
    } else {
      await fault(w, work, status, err, sink);
    }
  } finally {
    await sink.flush();
  }
}

/** The claim ended under us: an interrupt or skip (clean up), or a shutdown (hand the lease back). */
async function claimEnded(w: Worker, work: RevisionWork, sink: RevisionLogSink): Promise<void> {
  const status = await revisionStatus(w.db.orm, work.id);
  if (status && isTerminal(status)) {
    sink.log("build", `Slipway: stopped (${status}).`);
    if (status !== "DEPLOYED") await discard(w, work);
  }
  // Last, once its log is stored: a released lease tells a deletion waiting on this revision (and
  // anyone watching it) that the worker is done with it.
  await sink.flush();
  await releaseLease(w.db.orm, work.id, w.workerId);
}

/** Removes a revision's files; a failure here must not keep the revision from its status. */
async function discard(w: Worker, work: RevisionWork): Promise<void> {
  await w.runtimes
    .of(work.runtime)
    .discard(work.deploymentId, work.id)
    .catch((err) => {
      w.log.warn({ err, revisionId: work.id }, "removing a revision's files failed");
    });
}

async function fail(
  w: Worker,
  work: RevisionWork,
  from: RevisionStatus,
  to: RevisionStatus,
  message: string,
  sink: RevisionLogSink,
): Promise<void> {
  sink.log(to === "DEPLOY_FAILED" ? "deploy" : "build", `Slipway: ${to}: ${message}`);
  await sink.flush();
  // Files first: once the status says failed, nothing but its logs is left.
  await discard(w, work);
  if (await moveRevision(w, w.db.orm, work.id, from, to, sink.redactLine(message)))
    await notifyStatus(w, work.id);
  else await releaseLease(w.db.orm, work.id, w.workerId);
}

/** A fault of ours or of the platform: UNKNOWN, retried with back-off, failed after a few tries. */
async function fault(
  w: Worker,
  work: RevisionWork,
  from: RevisionStatus,
  err: unknown,
  sink: RevisionLogSink,
): Promise<void> {
  const attempts = work.attempts + 1;
  w.log.warn({ err, revisionId: work.id, attempts }, "reconciler fault");
  await setAttempts(w.db.orm, work.id, attempts);
  if (attempts >= MAX_ATTEMPTS) {
    const to = phaseFailure(from);
    await fail(w, work, from, to, `gave up after ${attempts} faults: ${messageOf(err)}`, sink);
    return;
  }
  sink.log("build", `Slipway: fault (${messageOf(err)}); retrying.`);
  const moved =
    from === "UNKNOWN" ||
    (await moveRevision(w, w.db.orm, work.id, from, "UNKNOWN", sink.redactLine(messageOf(err))));
  await releaseLease(w.db.orm, work.id, w.workerId, moved ? Math.min(250 * 2 ** attempts, 10_000) : 0);
  if (moved) await notifyStatus(w, work.id);
}

/** DEPLOYED and the deployment's active revision and URL, in one transaction. */
async function finishDeploy(w: Worker, work: RevisionWork, activation: Activation): Promise<boolean> {
  return w.db.orm.transaction(async (tx) => {
    if (!(await moveRevision(w, tx, work.id, "DEPLOYING", "DEPLOYED"))) return false;
    // An image revision names the deployed image's version; other sources leave it as it was.
    await activateRevision(tx, work.deploymentId, work.id, activation.url, activation.imageVersion);
    // A new revision is use: an UNUSED deployment is READY again (a no-op otherwise).
    await moveDeployment(tx, work.deploymentId, "UNUSED", "READY");
    return true;
  });
}

/** The revision was interrupted after traffic switched to it: put the active one back. */
async function undoActivation(w: Worker, work: RevisionWork): Promise<void> {
  const previous = await activeRevisionOf(w.db.orm, work.deploymentId);
  if (previous) await activateExisting(w, previous);
  else await w.runtimes.of(work.runtime).teardown(work.deploymentId);
}

/**
 * Provisions the deployment's database (when configured; a remote data plane runs its own) and
 * makes a new deployment READY.
 */
async function ensureDatabase(w: Worker, work: RevisionWork, remote: boolean) {
  const db =
    w.appDbs && !remote
      ? await w.appDbs.provision(w.db.orm, work.deploymentId, work.resourceSpec)
      : undefined;
  if (work.deploymentStatus === "AWAITING_DATABASE") {
    await moveDeployment(w.db.orm, work.deploymentId, "AWAITING_DATABASE", "READY");
  }
  return db;
}
