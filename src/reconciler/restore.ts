import { moveDeployment } from "../core/deployments/write-store.ts";
import type { PhaseContext } from "../runtimes/interface.ts";
import { buildWithin } from "./build-limit.ts";
import type { Worker } from "./context.ts";
import { messageOf } from "./errors.ts";
import { envFor, specFor } from "./spec.ts";
import { activeDeployments, deploymentStates, loadWork } from "./store.ts";
import { textField } from "./work.ts";

/**
 * Runs an already-DEPLOYED revision again (after a restart, to follow another process, or to undo
 * an interrupted switch): without a rebuild when its build output is still there. Its status does
 * not change.
 */
export async function activateExisting(
  w: Worker,
  revisionId: string,
  signal = new AbortController().signal,
): Promise<void> {
  const work = await loadWork(w.db.orm, revisionId);
  if (!work) return;
  const { env, secrets, redisPassword } = await envFor(w, work);
  const sink = w.sinks.for(work.id, secrets, work.deploymentId);
  const ctx: PhaseContext = { log: (stream, line) => sink.ingest(stream, line), signal };
  const spec = await specFor(w, work, env);
  spec.redisPassword = redisPassword;
  const commit = textField(work.sourceRevisionConfig, "repo_commit_sha");
  if (spec.source.kind === "git" && commit) spec.source = { ...spec.source, commitSha: commit };
  const runtime = w.runtimes.of(work.runtime);
  if (!(await runtime.isBuilt(spec))) {
    sink.log("build", "Slipway: the build output is gone; building this revision again.");
    await runtime.prepare(spec, ctx);
    await buildWithin(runtime, spec, ctx, w.config.limits.buildTimeoutMs);
  }
  const activation = await runtime.activate(spec, ctx);
  sink.log("deploy", `Slipway: serving at ${activation.url}.`);
  await sink.flush();
}

/** On start: every deployment's active revision runs again before new work is claimed. */
export async function restoreActive(w: Worker, concurrency: number): Promise<void> {
  const queue = await activeDeployments(w.db.orm);
  const worker = async () => {
    for (let d = queue.shift(); d; d = queue.shift()) {
      if (w.stopped()) return;
      w.restoring.add(d.id);
      try {
        await activateExisting(w, d.active_revision_id, w.shutdown);
        w.served.set(d.id, d.active_revision_id);
        if (d.status === "UNKNOWN") await moveDeployment(w.db.orm, d.id, "UNKNOWN", "READY");
      } catch (err) {
        if (w.stopped()) return;
        w.log.error({ err, deploymentId: d.id }, "reconciler: could not restart an active revision");
        w.sinks.get(d.active_revision_id)?.log("deploy", `Slipway: restart failed: ${messageOf(err)}`);
        if (d.status === "READY") await moveDeployment(w.db.orm, d.id, "READY", "UNKNOWN").catch(() => {});
      } finally {
        w.restoring.delete(d.id);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, worker));
}

/**
 * Keeps what this process runs in line with what other processes decided, for deployments it
 * also runs (both restored them at start): a newer active revision is switched to here too
 * (rebuilt when its build is not on this machine), and a removed deployment is stopped here too.
 */
export async function followOthers(w: Worker): Promise<void> {
  if (w.served.size === 0) return;
  const ids = [...w.served.keys()];
  const byId = new Map((await deploymentStates(w.db.orm, ids)).map((r) => [r.id, r]));
  const busy = new Set([...w.jobs.values()].map((j) => j.deploymentId));
  for (const id of ids) {
    if (w.deletions.has(id) || w.following.has(id) || busy.has(id)) continue;
    const row = byId.get(id);
    if (!row) {
      await w.runtimes.teardown(id);
      w.served.delete(id);
      w.log.info({ deploymentId: id }, "reconciler: stopped a deployment removed by another process");
      continue;
    }
    // AWAITING_DELETE: whoever claims it tears it down (here too, if this process does).
    const active = row.active_revision_id;
    if (row.status === "AWAITING_DELETE" || !active || active === w.served.get(id)) continue;
    const done = activateExisting(w, active, w.shutdown)
      .then(() => {
        w.served.set(id, active);
        w.log.info(
          { deploymentId: id, revisionId: active },
          "reconciler: switched to another process's deploy",
        );
      })
      .catch((err) =>
        w.log.warn({ err, deploymentId: id }, "reconciler: could not follow a new active revision"),
      )
      .finally(() => w.following.delete(id));
    w.following.set(id, done);
  }
}
