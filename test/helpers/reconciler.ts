import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Config } from "../../src/config.ts";
import { removeDeployment } from "../../src/core/deployments/write-store.ts";
import { encryptionContext } from "../../src/crypto/envelope.ts";
import { rows } from "../../src/db/client.ts";
import { Reconciler, type ReconcilerOptions } from "../../src/reconciler/reconciler.ts";
import type { SourceResolver } from "../../src/reconciler/sources.ts";
import type { Runtime } from "../../src/runtimes/interface.ts";
import { reconcilerLookups } from "../../src/wiring/reconciler.ts";
import type { TestContext } from "./harness.ts";

/**
 * Rows as the deployments API writes them (one transaction: seq, QUEUED with history, older
 * not-yet-building revisions SKIPPED, latest_revision_id, NOTIFY), so the reconciler can be tested
 * on its own. The end-to-end suites use the real API.
 */
export async function insertDeployment(
  ctx: TestContext,
  opts: {
    name?: string;
    source?: string;
    sourceConfig?: Record<string, unknown>;
    tenant?: { orgId: string; workspaceId: string };
  } = {},
): Promise<string> {
  const tenant = opts.tenant ?? { orgId: ctx.orgId, workspaceId: ctx.workspaceId };
  const [row] = await rows<{ id: string }>(
    ctx.db.orm,
    sql`INSERT INTO deployments (organization_id, workspace_id, name, source, source_config)
        VALUES (${tenant.orgId}, ${tenant.workspaceId}, ${opts.name ?? `app-${randomBytes(4).toString("hex")}`},
                ${opts.source ?? "internal_template"}, ${JSON.stringify(opts.sourceConfig ?? {})}::jsonb)
        RETURNING id`,
  );
  if (!row) throw new Error("insert failed");
  return row.id;
}

export async function queueRevision(
  ctx: TestContext,
  deploymentId: string,
  opts: {
    secrets?: Record<string, string>;
    /** Becomes framework_config_path: the scripted runtime's handle on the revision. */
    tag?: string;
    sourceRevisionConfig?: Record<string, unknown>;
    /** The revision's resource_spec, there from the start (a running reconciler may claim it at once). */
    resourceSpec?: Record<string, unknown> | null;
    skipOlder?: boolean;
    status?: string;
    lease?: { owner: string; expiredMsAgo: number };
  } = {},
): Promise<string> {
  const id = await ctx.db.orm.transaction(async (tx) => {
    const [dep] = await rows<{ revision_count: number; source: string }>(
      tx,
      sql`SELECT revision_count, source FROM deployments WHERE id = ${deploymentId} FOR UPDATE`,
    );
    if (!dep) throw new Error("no deployment");
    const seq = dep.revision_count + 1;
    const status = opts.status ?? "QUEUED";
    const history = JSON.stringify([{ status, at: new Date().toISOString() }]);
    const [rev] = await rows<{ id: string }>(
      tx,
      sql`INSERT INTO revisions (deployment_id, seq, status, source, source_revision_config, resource_spec,
                                 status_history, lease_owner, lease_expires_at)
          VALUES (${deploymentId}, ${seq}, ${status}, ${dep.source},
                  ${JSON.stringify(opts.sourceRevisionConfig ?? { repo_ref: "hello-http", framework_config_path: opts.tag ?? null })}::jsonb,
                  ${opts.resourceSpec == null ? null : JSON.stringify(opts.resourceSpec)}::jsonb,
                  ${history}::jsonb, ${opts.lease?.owner ?? null},
                  ${opts.lease ? sql`now() - ${opts.lease.expiredMsAgo}::int * interval '1 millisecond'` : null})
          RETURNING id`,
    );
    if (!rev) throw new Error("insert failed");
    let position = 0;
    for (const [name, value] of Object.entries(opts.secrets ?? {})) {
      const sid = crypto.randomUUID();
      const enc = ctx.keyring.encrypt(value, encryptionContext("revision_secrets", "value_enc", sid));
      await tx.execute(
        sql`INSERT INTO revision_secrets (id, revision_id, name, value_enc, position)
            VALUES (${sid}, ${rev.id}, ${name}, ${enc}, ${position++})`,
      );
    }
    if (opts.skipOlder ?? true) {
      const skipped = JSON.stringify([{ status: "SKIPPED", at: new Date().toISOString() }]);
      await tx.execute(
        sql`UPDATE revisions SET status = 'SKIPPED', status_history = status_history || ${skipped}::jsonb
             WHERE deployment_id = ${deploymentId} AND seq < ${seq} AND status IN ('QUEUED', 'AWAITING_BUILD')`,
      );
    }
    await tx.execute(
      // What the record shows of the latest revision (the deployments store keeps it so).
      sql`UPDATE deployments SET revision_count = ${seq}, latest_revision_id = ${rev.id}, updated_at = now(),
             latest_revision_content = (
                 SELECT jsonb_build_object('source_revision_config', r.source_revision_config,
                          'resource_spec', r.resource_spec, 'secret_references', r.secret_references,
                          'secrets', coalesce((SELECT jsonb_agg(jsonb_build_object('name', s.name, 'value', '********') ORDER BY s.position)
                                                      FROM revision_secrets s WHERE s.revision_id = r.id), '[]'::jsonb))
                   FROM revisions r WHERE r.id = ${rev.id})
           WHERE id = ${deploymentId}`,
    );
    return rev.id;
  });
  await ctx.db.notify("slipway_work", id);
  return id;
}

/** What the API's interrupt does: INTERRUPTED + interrupt_requested, history, NOTIFY. */
export async function interrupt(ctx: TestContext, revisionId: string): Promise<void> {
  const entry = JSON.stringify([{ status: "INTERRUPTED", at: new Date().toISOString() }]);
  await ctx.db.orm.execute(
    sql`UPDATE revisions SET status = 'INTERRUPTED', interrupt_requested = true,
               status_history = status_history || ${entry}::jsonb
         WHERE id = ${revisionId}`,
  );
  await ctx.db.notify("slipway_work", revisionId);
}

export async function requestDelete(ctx: TestContext, deploymentId: string): Promise<void> {
  await ctx.db.orm.execute(sql`UPDATE deployments SET status = 'AWAITING_DELETE' WHERE id = ${deploymentId}`);
  await ctx.db.notify("slipway_work", deploymentId);
}

export interface RevisionRow {
  status: string;
  status_history: { status: string; at: string; message?: string }[];
  source_revision_config: Record<string, unknown>;
  lease_owner: string | null;
  status_message: string | null;
}

export async function revisionRow(ctx: TestContext, id: string): Promise<RevisionRow> {
  const [row] = await rows<RevisionRow>(
    ctx.db.orm,
    sql`SELECT status, status_history, source_revision_config, lease_owner, status_message
          FROM revisions WHERE id = ${id}`,
  );
  if (!row) throw new Error(`no revision ${id}`);
  return row;
}

export interface DeploymentRow {
  status: string;
  active_revision_id: string | null;
  source_config: Record<string, unknown>;
  database_name: string | null;
}

export async function deploymentRow(ctx: TestContext, id: string): Promise<DeploymentRow | undefined> {
  const [row] = await rows<DeploymentRow>(
    ctx.db.orm,
    sql`SELECT status, active_revision_id, source_config, database_name FROM deployments WHERE id = ${id}`,
  );
  return row;
}

export async function logLines(ctx: TestContext, revisionId: string, stream?: string): Promise<string[]> {
  const found = await rows<{ line: string }>(
    ctx.db.orm,
    sql`SELECT line FROM revision_logs WHERE revision_id = ${revisionId}
         ${stream ? sql`AND stream = ${stream}` : sql``} ORDER BY id`,
  );
  return found.map((r) => r.line);
}

export const directorySource: SourceResolver = async () => ({ kind: "directory", path: "/nonexistent" });

export function reconcilerConfig(ctx: TestContext, overrides: Partial<Config["reconciler"]> = {}): Config {
  return {
    ...ctx.config,
    reconciler: { ...ctx.config.reconciler, enabled: true, pollMs: 50, leaseMs: 1500, ...overrides },
  };
}

/** A reconciler on the suite's database with a given runtime; stopped by the caller. */
export function makeReconciler(
  ctx: TestContext,
  runtime: Runtime,
  opts: Partial<ReconcilerOptions> = {},
): Reconciler {
  return new Reconciler({
    config: reconcilerConfig(ctx),
    db: ctx.db,
    keyring: ctx.keyring,
    runtimes: { local: runtime },
    resolveSource: directorySource,
    lookups: reconcilerLookups,
    removeDeployment,
    ...opts,
  });
}

export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
