import { inAuditedTransaction } from "../../core/audit/scope.ts";
import { FieldsInvalid } from "../../core/errors.ts";
import { emit } from "../../core/events/emit.ts";
import { recordRemoteState, revisionsOfListener } from "../../core/revisions/listener-store.ts";
import { REPORT_CHANNEL } from "../../db/channels.ts";
import type { Database, Executor } from "../../db/client.ts";
import type { DeploymentPodsReport, StatusReport } from "../../protocol/listener.ts";
import { type PodsSubject, podsSubjects, savePods } from "./pods-store.ts";
import { touchListener } from "./store.ts";

/** Longest reason kept of a report (status_message shortens it further). */
const MAX_REASON = 2000;

type Invalid = ConstructorParameters<typeof FieldsInvalid>[0];

/**
 * POST /v2/listeners/{id}/status: records each report on its revision and wakes the worker rolling
 * it out, which moves the revision's status (reconciler/remote.ts); an empty list is a heartbeat.
 * Pods reports (`deployments`) are stored per deployment, and judge whether its active revision
 * serves (deployment.unhealthy / deployment.healthy on a change). A revision or deployment the
 * listener does not serve refuses the whole report (422, nothing recorded).
 */
export async function reportStatus(db: Database, listenerId: string, body: StatusReport): Promise<void> {
  const ids = body.revisions.map((r) => r.revision_id.toLowerCase());
  const known = await revisionsOfListener(db.orm, listenerId, ids);
  refuseOthers(ids, known, ["revisions", "revision_id"], "Revision");
  const pods = body.deployments ?? [];
  await inAuditedTransaction(db.orm, async (tx) => {
    for (const [i, r] of body.revisions.entries()) {
      const reason = r.reason?.trim() ? r.reason.slice(0, MAX_REASON) : null;
      await recordRemoteState(tx, ids[i] ?? r.revision_id, r.state, reason);
    }
    if (pods.length) await recordPods(tx, listenerId, pods);
    await touchListener(tx, listenerId);
  });
  for (const id of new Set(ids)) await db.notify(REPORT_CHANNEL, id).catch(() => {});
}

/** 422 naming each id of the report (`[list, field]` of the body) that is not this listener's. */
function refuseOthers(
  ids: string[],
  known: { has(id: string): boolean },
  [list, field]: [string, string],
  what: string,
): void {
  const items: Invalid = ids.flatMap((id, i) =>
    known.has(id)
      ? []
      : [
          {
            loc: ["body", list, i, field],
            msg: `${what} ${id} is not one of this listener's deployments.`,
            type: "value_error",
          },
        ],
  );
  if (items.length > 0) throw new FieldsInvalid(items);
}

/** Stores each deployment's pods; a transition of its active revision's serving emits its event. */
async function recordPods(tx: Executor, listenerId: string, reports: DeploymentPodsReport[]): Promise<void> {
  const ids = reports.map((r) => r.deployment_id.toLowerCase());
  const subjects = new Map<string, PodsSubject>(
    (await podsSubjects(tx, listenerId, [...new Set(ids)])).map((s) => [s.id, s]),
  );
  refuseOthers(ids, subjects, ["deployments", "deployment_id"], "Deployment");
  for (const [i, r] of reports.entries()) {
    const subject = subjects.get(ids[i] ?? "");
    if (!subject) continue;
    const reason = r.serving ? null : (r.reason?.trim() || "no API pod is ready").slice(0, MAX_REASON);
    // Only the active revision's pods say whether the deployment serves: a revision still rolling
    // out (or failing to) is the rollout's business.
    const judged = subject.active_revision_id === r.revision_id.toLowerCase();
    const unhealthy = !judged
      ? "keep"
      : !r.serving && !subject.unhealthy
        ? "set"
        : r.serving && subject.unhealthy
          ? "clear"
          : "keep";
    await savePods(tx, {
      deploymentId: subject.id,
      listenerId,
      revisionId: r.revision_id.toLowerCase(),
      pods: r.pods,
      serving: r.serving,
      reason,
      unhealthy,
    });
    if (unhealthy === "keep") continue;
    subject.unhealthy = unhealthy === "set";
    await emit(tx, {
      organizationId: subject.organization_id,
      workspaceId: subject.workspace_id,
      type: unhealthy === "set" ? "deployment.unhealthy" : "deployment.healthy",
      data: {
        deployment_id: subject.id,
        deployment_name: subject.name,
        revision_id: subject.active_revision_id,
        ...(unhealthy === "set" ? { reason } : {}),
      },
    });
  }
}
