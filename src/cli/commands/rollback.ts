// Acting on one revision: rollback (redeploy an earlier one and wait), interrupt.
import { type Revision, SlipwayError, unwrap } from "../../sdk/client.ts";
import { getRevision } from "../../sdk/revisions.ts";
import type { FlagSpec } from "../args.ts";
import { atMost, type Context, need, requireDeployment } from "../context.ts";
import { resolveRevision } from "../revision-ref.ts";
import { revisionsOf } from "./deployments.ts";
import { watchRevision } from "./watch.ts";

export const rollbackFlags: FlagSpec = { booleans: ["no-wait"] };
export const interruptFlags: FlagSpec = { values: ["revision"] };

export async function rollback(ctx: Context): Promise<void> {
  atMost(ctx, 2);
  const client = ctx.client();
  const dep = await requireDeployment(client, need(ctx, 0, "deployment NAME"));
  const ref = ctx.args.positionals[1];
  let target: Revision | undefined;
  if (ref) target = await resolveRevision(client, dep, ref);
  else {
    // The newest revision that was DEPLOYED before the active one.
    const revs = await revisionsOf(ctx, dep.id);
    const activeAt = revs.findIndex((r) => r.id === dep.active_revision_id);
    target = revs.slice(activeAt + 1).find((r) => r.status_history.some((h) => h.status === "DEPLOYED"));
    if (!target)
      throw new SlipwayError(404, `Deployment ${dep.name} has no earlier DEPLOYED revision to roll back to.`);
  }
  const after = await unwrap(
    client.api.POST("/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy", {
      params: { path: { deployment_id: dep.id, revision_id: target.id } },
    }),
  );
  const rid = after.latest_revision_id;
  if (!rid) throw new SlipwayError(500, "The server made no revision.");
  const made = await getRevision(client, dep.id, rid);
  ctx.out.line(
    `Rolling back ${dep.name} to revision #${target.number}: new revision #${made.number} (${rid}).`,
  );
  ctx.out.event({ event: "queued", deployment_id: dep.id, revision_id: rid, redeploy_of: target.id });
  if (ctx.args.bool("no-wait")) return;
  await watchRevision(ctx, after, rid);
}

export async function interrupt(ctx: Context): Promise<void> {
  atMost(ctx, 1);
  const client = ctx.client();
  const dep = await requireDeployment(client, need(ctx, 0, "deployment NAME"));
  const ref = ctx.args.value("revision");
  const rid = ref ? (await resolveRevision(client, dep, ref)).id : dep.latest_revision_id;
  if (!rid) throw new SlipwayError(404, `Deployment ${dep.name} has no revision.`);
  const rev = await unwrap(
    client.api.POST("/v2/deployments/{deployment_id}/revisions/{revision_id}/interrupt", {
      params: { path: { deployment_id: dep.id, revision_id: rid } },
    }),
  );
  ctx.out.result(rev, {
    rows: [{ ...rev, "#": `#${rev.number}` }],
    columns: ["#", "id", "status", "status_message"],
    states: ["status"],
  });
}
