// Deployment commands: ls, status, revisions, open, delete.
import { spawn } from "node:child_process";
import { type Revision, SlipwayError, unwrap } from "../../sdk/client.ts";
import { failureReason } from "../../sdk/follow.ts";
import { getRevision } from "../../sdk/revisions.ts";
import { DEPLOYMENT_STATUSES, REVISION_STATUSES } from "../../sdk/statuses.ts";
import { type FlagSpec, UsageError } from "../args.ts";
import { atMost, type Context, need, requireDeployment } from "../context.ts";

export const lsFlags: FlagSpec = { values: ["status", "name-contains", "limit", "offset"] };
export const nameOnlyFlags: FlagSpec = {};
export const deleteFlags: FlagSpec = { booleans: ["yes"], aliases: { y: "yes" } };

/**
 * `--status` values split into the deployment's own statuses and its latest revision's states.
 * Values of one kind are alternatives; both kinds given must both match. UNKNOWN, a state of both,
 * goes with the kind the other values have (with both when both are given; alone, the deployment's).
 */
export function statusFilter(text: string): { status?: string; latest_revision_status?: string } {
  const values = text
    .split(",")
    .map((v) => v.trim().toUpperCase())
    .filter(Boolean);
  const isDeployment = (v: string) => (DEPLOYMENT_STATUSES as readonly string[]).includes(v);
  const isRevision = (v: string) => (REVISION_STATUSES as readonly string[]).includes(v);
  const unknown = values.filter((v) => !isDeployment(v) && !isRevision(v));
  if (unknown.length || !values.length)
    throw new UsageError(
      `--status ${unknown.join(",") || '""'} is not a state. Deployment statuses: ${DEPLOYMENT_STATUSES.join(", ")}. ` +
        `Revision states (of the latest revision): ${REVISION_STATUSES.join(", ")}.`,
      true,
    );
  const deployment = values.filter((v) => isDeployment(v) && !isRevision(v));
  const revision = values.filter((v) => isRevision(v) && !isDeployment(v));
  const both = values.filter((v) => isDeployment(v) && isRevision(v));
  const kinds = { deployment: deployment.length > 0, revision: revision.length > 0 };
  if (kinds.revision) revision.push(...both);
  if (kinds.deployment || !kinds.revision) deployment.push(...both);
  return {
    ...(deployment.length ? { status: deployment.join(",") } : {}),
    ...(revision.length ? { latest_revision_status: revision.join(",") } : {}),
  };
}

function intFlag(ctx: Context, name: string, fallback: number, min: number, max: number): number {
  const text = ctx.args.value(name);
  const n = text === undefined ? fallback : Number(text);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}.`, true);
  return n;
}

export async function ls(ctx: Context): Promise<void> {
  const { args } = ctx;
  atMost(ctx, 0);
  const status = args.value("status");
  const query = {
    limit: intFlag(ctx, "limit", 100, 1, 100),
    offset: intFlag(ctx, "offset", 0, 0, Number.MAX_SAFE_INTEGER),
    ...(status !== undefined ? statusFilter(status) : {}),
    ...(args.value("name-contains") ? { name_contains: args.value("name-contains") } : {}),
  };
  const page = await unwrap(ctx.client().api.GET("/v2/deployments", { params: { query } }));
  ctx.out.result(page, {
    rows: page.resources.map((d) => ({
      ...d,
      latest_revision: d.latest_revision_status,
      url: d.source_config.custom_url,
      updated: d.updated_at,
    })),
    columns: ["name", "status", "latest_revision", "source", "url", "updated", "id"],
    states: ["status", "latest_revision"],
  });
}

export async function revisionsOf(ctx: Context, deploymentId: string, limit = 100): Promise<Revision[]> {
  const page = await unwrap(
    ctx.client().api.GET("/v2/deployments/{deployment_id}/revisions", {
      params: { path: { deployment_id: deploymentId }, query: { limit } },
    }),
  );
  return page.resources;
}

const named = (r: Revision | undefined | null) => (r ? `#${r.number} ${r.id}` : null);

type Health = NonNullable<ProcessList["health"]>;
type ProcessList = Awaited<ReturnType<typeof processesOf>>;

const processesOf = (ctx: Context, id: string) =>
  unwrap(
    ctx.client().api.GET("/v2/deployments/{deployment_id}/processes", {
      params: { path: { deployment_id: id } },
    }),
  );

/** A listener deployment's pods as one line: serving, or why not (and since when its active revision has not). */
function healthLine(health: Health | null | undefined): string {
  if (!health) return "no pods reported yet";
  if (health.unhealthy_since)
    return `UNHEALTHY since ${health.unhealthy_since}: ${health.reason ?? health.unhealthy_reason ?? "not serving"}`;
  return health.serving ? "serving" : `not serving yet: ${health.reason ?? "no API pod is ready"}`;
}

export async function status(ctx: Context): Promise<void> {
  atMost(ctx, 1);
  const client = ctx.client();
  const dep = await requireDeployment(client, need(ctx, 0, "deployment NAME"));
  const [latest] = await revisionsOf(ctx, dep.id, 1);
  // A listener's deployment: how its pods are doing after rollout (the listener's last report).
  const remote = typeof dep.source_config.listener_id === "string";
  const health = remote ? ((await processesOf(ctx, dep.id)).health ?? null) : undefined;
  if (ctx.out.json) {
    ctx.out.result({ ...dep, latest_revision: latest ?? null, ...(remote ? { health } : {}) });
    return;
  }
  let active: Revision | null = null;
  if (dep.active_revision_id)
    active =
      dep.active_revision_id === latest?.id
        ? latest
        : await getRevision(client, dep.id, dep.active_revision_id);
  ctx.out.table(
    [
      { field: "name", value: dep.name },
      { field: "id", value: dep.id },
      { field: "status", value: dep.status },
      { field: "latest revision", value: named(latest) },
      { field: "revision state", value: latest?.status ?? dep.latest_revision_status },
      { field: "message", value: latest ? failureReason(latest) : null },
      { field: "active revision", value: named(active) },
      ...(remote ? [{ field: "health", value: healthLine(health) }] : []),
      { field: "source", value: dep.source },
      { field: "url", value: dep.source_config.custom_url },
      { field: "secrets", value: dep.secrets.map((s) => s.name).join(", ") },
    ],
    ["field", "value"],
    { states: ["value"] },
  );
}

export async function revisions(ctx: Context): Promise<void> {
  atMost(ctx, 1);
  const dep = await requireDeployment(ctx.client(), need(ctx, 0, "deployment NAME"));
  const revs = await revisionsOf(ctx, dep.id);
  ctx.out.result(revs, {
    rows: revs.map((r) => ({
      ...r,
      "#": `#${r.number}`,
      active: r.id === dep.active_revision_id ? "*" : "",
      message: failureReason(r),
    })),
    columns: ["#", "active", "id", "status", "created_at", "message"],
    states: ["status"],
  });
}

export async function open(ctx: Context): Promise<void> {
  atMost(ctx, 1);
  const dep = await requireDeployment(ctx.client(), need(ctx, 0, "deployment NAME"));
  const url = dep.source_config.custom_url;
  if (!url) throw new SlipwayError(404, `Deployment ${dep.name} has no URL yet.`);
  ctx.out.result({ url }, { rows: [{ url }], columns: ["url"] });
  // Opens a browser only for a person at a terminal; scripts get the URL printed.
  if (process.stdout.isTTY && !ctx.out.json) {
    const opener = process.platform === "darwin" ? "open" : "xdg-open";
    spawn(opener, [url], { stdio: "ignore", detached: true })
      .on("error", () => undefined)
      .unref();
  }
}

export async function remove(ctx: Context): Promise<void> {
  atMost(ctx, 1);
  const client = ctx.client();
  const name = need(ctx, 0, "deployment NAME");
  const dep = await requireDeployment(client, name);
  if (!ctx.args.bool("yes")) {
    if (!ctx.canPrompt)
      throw new UsageError(`Deleting ${name} needs --yes (no prompt without a terminal or with --no-input).`);
    const answer = await ctx.prompt(
      `Delete deployment ${name} and its running app? Type its name to confirm: `,
    );
    if (answer !== name) throw new UsageError("Not confirmed: nothing deleted.");
  }
  await unwrap(
    client.api.DELETE("/v2/deployments/{deployment_id}", { params: { path: { deployment_id: dep.id } } }),
  );
  ctx.out.result(
    { deleted: dep.id, name },
    { rows: [{ deleted: name, id: dep.id }], columns: ["deleted", "id"] },
  );
}
