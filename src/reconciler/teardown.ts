import { revisionIdsOf, unfinishedRevisions } from "../core/revisions/read-store.ts";
import { writeRevisionStatus } from "../core/revisions/status-store.ts";
import type { Worker } from "./context.ts";
import { LostClaim } from "./errors.ts";
import { type ClaimedDeletion, deferDeletion, leaseHeld } from "./store.ts";

/** Starts tearing a claimed deployment down; a failure hands the claim back to be retried. */
export function startTeardown(w: Worker, d: ClaimedDeletion): void {
  const done = teardown(w, d)
    .catch(async (err) => {
      w.log.error({ err, deploymentId: d.id }, "reconciler: teardown failed; retrying");
      await deferDeletion(w.db.orm, d.id, w.workerId, 2000).catch(() => {});
    })
    .finally(() => w.deletions.delete(d.id));
  w.deletions.set(d.id, done);
}

/** AWAITING_DELETE → revisions stopped, processes and files gone, database dropped → row removed. */
async function teardown(w: Worker, d: ClaimedDeletion): Promise<void> {
  const orm = w.db.orm;
  for (const r of await unfinishedRevisions(orm, d.id)) {
    await writeRevisionStatus(
      orm,
      { revisionId: r.id },
      { from: [r.status], to: "INTERRUPTED", message: "the deployment is being deleted" },
    );
  }
  for (const job of w.jobs.values()) {
    if (job.deploymentId === d.id) job.controller.abort(new LostClaim());
  }
  // A worker (here or elsewhere) still winding down one of its revisions: come back shortly.
  if (await leaseHeld(orm, d.id)) {
    await deferDeletion(orm, d.id, w.workerId, 200);
    setTimeout(() => w.wake(), 250).unref?.();
    return;
  }
  await w.runtimes.teardown(d.id);
  w.served.delete(d.id);
  if (w.appDbs) await w.appDbs.drop(d.id);
  for (const id of await revisionIdsOf(orm, d.id)) await w.sinks.close(id);
  await w.removeDeployment(orm, d.id);
  w.log.info({ deploymentId: d.id }, "reconciler: deployment torn down and removed");
}
