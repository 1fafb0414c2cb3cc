// Deployment commands: ls, status, logs, revisions, rollback, interrupt, open, delete.
import { spawn } from "node:child_process";
import { type Revision, SlipwayError, unwrap } from "../../sdk/client.ts";
import { followLogs } from "../../sdk/revisions.ts";
import { type FlagSpec, UsageError } from "../args.ts";
import { type Context, need, requireDeployment } from "../context.ts";
import { watchRevision } from "./watch.ts";

export const deploymentFlags: FlagSpec = {
  booleans: ["follow", "build", "yes", "no-wait", "all"],
  values: ["revision", "since", "status", "limit", "offset", "name-contains"],
  aliases: { f: "follow", y: "yes" },
};

export async function ls(ctx: Context): Promise<void> {
  const { args } = ctx;
  const client = ctx.client();
  const limit = Number(args.value("limit") ?? 100);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new UsageError("--limit must be 1 to 100.");
  const query = {
    limit,
    offset: Number(args.value("offset") ?? 0),
    ...(args.value("status") ? { status: args.value("status") } : {}),
    ...(args.value("name-contains") ? { name_contains: args.value("name-contains") } : {}),
  };
  const page = await unwrap(client.api.GET("/v2/deployments", { params: { query } }));
  ctx.out.result(page, {
    rows: page.resources.map((d) => ({ ...d, url: d.source_config.custom_url, updated: d.updated_at })),
    columns: ["name", "status", "source", "url", "updated", "id"],
  });
}

async function revisionsOf(ctx: Context, deploymentId: string, limit = 100): Promise<Revision[]> {
  const page = await unwrap(
    ctx.client().api.GET("/v2/deployments/{deployment_id}/revisions", {
      params: { path: { deployment_id: deploymentId }, query: { limit } },
    }),
  );
  return page.resources;
}

export async function status(ctx: Context): Promise<void> {
  const dep = await requireDeployment(ctx.client(), need(ctx, 0, "deployment NAME"));
  const [latest] = await revisionsOf(ctx, dep.id, 1);
  if (ctx.out.json) {
    ctx.out.result({ ...dep, latest_revision: latest ?? null });
    return;
  }
  ctx.out.table(
    [
      { field: "name", value: dep.name },
      { field: "id", value: dep.id },
      { field: "status", value: dep.status },
      { field: "source", value: dep.source },
      { field: "url", value: dep.source_config.custom_url },
      { field: "active revision", value: dep.active_revision_id },
      { field: "latest revision", value: latest ? `${latest.id} ${latest.status}` : null },
      { field: "message", value: latest?.status_message },
      { field: "secrets", value: dep.secrets.map((s) => s.name).join(", ") },
    ],
    ["field", "value"],
  );
}

export async function revisions(ctx: Context): Promise<void> {
  const dep = await requireDeployment(ctx.client(), need(ctx, 0, "deployment NAME"));
  const revs = await revisionsOf(ctx, dep.id);
  ctx.out.result(revs, {
    rows: revs.map((r) => ({ ...r, active: r.id === dep.active_revision_id ? "*" : "" })),
    columns: ["active", "id", "status", "created_at", "status_message"],
  });
}

export async function logs(ctx: Context): Promise<void> {
  const { args, out } = ctx;
  const client = ctx.client();
  const dep = await requireDeployment(client, need(ctx, 0, "deployment NAME"));
  const revisionId = args.value("revision") ?? dep.active_revision_id ?? dep.latest_revision_id;
  if (!revisionId) throw new SlipwayError(404, `Deployment ${dep.name} has no revision yet.`);
  const type = args.bool("build") ? "build" : "deploy";
  const since = args.value("since");
  const print = (l: { at: string; line: string }) => {
    out.event({ event: "log", stream: type, at: l.at, line: l.line });
    out.line(l.line);
  };
  if (args.bool("follow")) {
    const abort = new AbortController();
    process.once("SIGINT", () => abort.abort());
    for await (const l of followLogs(client, dep.id, revisionId, { type, since, signal: abort.signal }))
      print(l);
    return;
  }
  const lines = await unwrap(
    client.api.GET("/v2/deployments/{deployment_id}/revisions/{revision_id}/logs", {
      params: {
        path: { deployment_id: dep.id, revision_id: revisionId },
        query: { type, limit: 5000, ...(since ? { since } : {}) },
      },
    }),
  );
  for (const l of lines) print(l);
}

export async function rollback(ctx: Context): Promise<void> {
  const client = ctx.client();
  const dep = await requireDeployment(client, need(ctx, 0, "deployment NAME"));
  let target = ctx.args.positionals[1];
  if (!target) {
    // The newest revision that was DEPLOYED before the active one.
    const revs = await revisionsOf(ctx, dep.id);
    const activeAt = revs.findIndex((r) => r.id === dep.active_revision_id);
    const previous = revs
      .slice(activeAt + 1)
      .find((r) => r.status_history.some((h) => h.status === "DEPLOYED"));
    if (!previous)
      throw new SlipwayError(404, `Deployment ${dep.name} has no earlier DEPLOYED revision to roll back to.`);
    target = previous.id;
  }
  const after = await unwrap(
    client.api.POST("/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy", {
      params: { path: { deployment_id: dep.id, revision_id: target } },
    }),
  );
  const rid = after.latest_revision_id;
  if (!rid) throw new SlipwayError(500, "The server made no revision.");
  ctx.out.line(`Rolling back ${dep.name} to revision ${target}: new revision ${rid}.`);
  ctx.out.event({ event: "queued", deployment_id: dep.id, revision_id: rid, redeploy_of: target });
  if (ctx.args.bool("no-wait")) return;
  await watchRevision(ctx, after, rid);
}

export async function interrupt(ctx: Context): Promise<void> {
  const client = ctx.client();
  const dep = await requireDeployment(client, need(ctx, 0, "deployment NAME"));
  const rid = ctx.args.value("revision") ?? dep.latest_revision_id;
  if (!rid) throw new SlipwayError(404, `Deployment ${dep.name} has no revision.`);
  const rev = await unwrap(
    client.api.POST("/v2/deployments/{deployment_id}/revisions/{revision_id}/interrupt", {
      params: { path: { deployment_id: dep.id, revision_id: rid } },
    }),
  );
  ctx.out.result(rev, { rows: [rev], columns: ["id", "status", "status_message"] });
}

export async function open(ctx: Context): Promise<void> {
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
