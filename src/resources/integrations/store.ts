import { and, asc, eq, sql } from "drizzle-orm";
import type { IntegrationRow } from "../../codehost/drivers.ts";
import { CLAIMABLE } from "../../core/revisions/states.ts";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import { LOCAL_GIT_POLL_LOCK } from "../../db/channels.ts";
import { type Executor, inTransaction, type Reader, rows } from "../../db/client.ts";
import { envelopeColumn } from "../../db/envelopes.ts";
import { integrations } from "../../db/schema/codehost.ts";
import { sqlList } from "../../db/sql.ts";

/**
 * The only module that writes SQL on `integrations`, `codehost_deliveries` and `local_git_heads`. Reading one by id is codehost/store.ts's
 * `findIntegration` (codehost may not import resources/), which the service calls too.
 */

export type NewIntegrationRow = typeof integrations.$inferInsert;

export function integrationRows(exec: Executor, organizationId: string): Promise<IntegrationRow[]> {
  return exec
    .select()
    .from(integrations)
    .where(eq(integrations.organizationId, organizationId))
    .orderBy(asc(integrations.createdAt), asc(integrations.id));
}

export async function insertIntegrationRow(
  exec: Executor,
  values: NewIntegrationRow,
): Promise<IntegrationRow> {
  const [row] = await exec.insert(integrations).values(values).returning();
  if (!row) throw new Error("storing the integration returned no row");
  return row;
}

export async function deleteIntegrationRow(
  exec: Executor,
  organizationId: string,
  id: string,
): Promise<void> {
  await exec
    .delete(integrations)
    .where(and(eq(integrations.id, id), eq(integrations.organizationId, organizationId)));
}

/**
 * The name of a live deployment of the organization that builds from the integration, if any
 * (a read of `deployments`, which core/deployments writes).
 */
export async function deploymentUsing(
  exec: Executor,
  organizationId: string,
  integrationId: string,
): Promise<string | undefined> {
  const [used] = await rows<{ name: string }>(
    exec,
    sql`SELECT name FROM deployments
         WHERE organization_id = ${organizationId} AND source = 'codehost'
           AND source_config->>'integration_id' = ${integrationId} AND status <> 'AWAITING_DELETE'
         LIMIT 1`,
  );
  return used?.name;
}

/** The push webhook's secret (crypto/envelope.ts, bound to the row id): what key rotation re-encrypts. */
export const integrationEnvelopes = (exec: Executor): EnvelopeColumn[] => [
  envelopeColumn(exec, integrations, integrations.webhookSecretEnc),
];

/** Stores a new webhook secret envelope; false when the integration is not the organization's. */
export async function setWebhookSecret(
  exec: Executor,
  organizationId: string,
  id: string,
  secretEnc: string,
): Promise<boolean> {
  const done = await exec
    .update(integrations)
    .set({ webhookSecretEnc: secretEnc })
    .where(and(eq(integrations.id, id), eq(integrations.organizationId, organizationId)))
    .returning({ id: integrations.id });
  return done.length > 0;
}

/** How long a delivery id is remembered: far longer than a code host retries or an admin redelivers. */
const DELIVERY_RETENTION = "7 days";
/** And at most this many per integration (the oldest go first). */
const DELIVERIES_KEPT = 10_000;

/**
 * Remembers a delivery id; false when it was already there (a redelivery). Old ids of the
 * integration go at the same time, so the table stays bounded.
 */
export async function recordDelivery(exec: Executor, integrationId: string, deliveryId: string) {
  return inTransaction(exec, async (tx) => {
    const added = await rows<{ delivery_id: string }>(
      tx,
      sql`INSERT INTO codehost_deliveries (integration_id, delivery_id) VALUES (${integrationId}, ${deliveryId})
          ON CONFLICT DO NOTHING RETURNING delivery_id`,
    );
    await tx.execute(
      sql`DELETE FROM codehost_deliveries
           WHERE integration_id = ${integrationId}
             AND (received_at < now() - ${DELIVERY_RETENTION}::interval
                  OR delivery_id IN (SELECT delivery_id FROM codehost_deliveries WHERE integration_id = ${integrationId}
                                      ORDER BY received_at DESC, delivery_id DESC OFFSET ${DELIVERIES_KEPT}))`,
    );
    return added.length > 0;
  });
}

/** Forgets a delivery whose handling failed, so that the host's retry is handled. */
export async function forgetDelivery(exec: Executor, integrationId: string, deliveryId: string) {
  await exec.execute(
    sql`DELETE FROM codehost_deliveries WHERE integration_id = ${integrationId} AND delivery_id = ${deliveryId}`,
  );
}

/** A deployment that builds on push from an integration, with what its latest revision builds. */
export interface PushTarget {
  id: string;
  workspace_id: string;
  organization_id: string;
  name: string;
  repo_url: string;
  /** The latest revision's: what a push must match, and where its app config is. */
  repo_ref: string | null;
  framework_config_path: string | null;
  /** The commit the latest revision pins or built; a push of it again makes nothing new. */
  repo_commit_sha: string | null;
}

/**
 * Live codehost deployments of the integration with `build_on_push: true` whose latest revision is
 * a codehost one (reads of `deployments` and `revisions`, which their stores write).
 */
export function pushTargets(exec: Reader, integrationId: string): Promise<PushTarget[]> {
  return rows<PushTarget>(
    exec,
    sql`SELECT d.id, d.workspace_id, d.organization_id, d.name, d.source_config->>'repo_url' AS repo_url,
               r.source_revision_config->>'repo_ref' AS repo_ref,
               r.source_revision_config->>'framework_config_path' AS framework_config_path,
               r.source_revision_config->>'repo_commit_sha' AS repo_commit_sha
          FROM deployments d JOIN revisions r ON r.id = d.latest_revision_id
         WHERE d.source = 'codehost' AND d.source_config->>'integration_id' = ${integrationId}
           AND d.source_config->>'build_on_push' = 'true' AND d.status <> 'AWAITING_DELETE'
           AND r.source = 'codehost'
         ORDER BY d.created_at, d.id`,
  );
}

/** A local_git repository branch some deployment builds on push from. */
export interface WatchedBranch {
  integration_id: string;
  /** The integration's directory. */
  path: string;
  repo_url: string;
  branch: string;
  /** The commits the latest revisions of the deployments that watch it are at (distinct). */
  commits: string[];
  /** Whether one of those revisions is still in progress with no commit resolved yet. */
  pending: boolean;
}

/** Every watched branch of local_git integrations (refs as a deployment names them: `main` or `refs/heads/main`). */
export function watchedLocalBranches(exec: Reader): Promise<WatchedBranch[]> {
  const commit = sql`r.source_revision_config->>'repo_commit_sha'`;
  return rows<WatchedBranch>(
    exec,
    sql`SELECT i.id AS integration_id, i.config->>'path' AS path,
               d.source_config->>'repo_url' AS repo_url,
               regexp_replace(r.source_revision_config->>'repo_ref', '^refs/heads/', '') AS branch,
               coalesce(array_agg(DISTINCT ${commit}) FILTER (WHERE ${commit} IS NOT NULL), '{}') AS commits,
               bool_or(${commit} IS NULL AND r.status IN (${sqlList(CLAIMABLE)})) AS pending
          FROM integrations i
          JOIN deployments d ON d.source = 'codehost' AND d.source_config->>'integration_id' = i.id::text
          JOIN revisions r ON r.id = d.latest_revision_id
         WHERE i.kind = 'local_git' AND d.source_config->>'build_on_push' = 'true'
           AND d.status <> 'AWAITING_DELETE' AND r.source = 'codehost'
           AND r.source_revision_config->>'repo_ref' NOT LIKE 'refs/tags/%'
         GROUP BY 1, 2, 3, 4
         ORDER BY 1, 3, 4`,
  );
}

/** The heads the poller last saw, keyed `integration|repo_url|branch`. */
export async function seenHeads(exec: Reader): Promise<Map<string, string>> {
  const found = await rows<{ integration_id: string; repo_url: string; branch: string; sha: string }>(
    exec,
    sql`SELECT integration_id, repo_url, branch, sha FROM local_git_heads`,
  );
  return new Map(found.map((h) => [headKey(h.integration_id, h.repo_url, h.branch), h.sha]));
}

export const headKey = (integrationId: string, repoUrl: string, branch: string) =>
  `${integrationId}|${repoUrl}|${branch}`;

/** Records the head the poller (or a push) saw. */
export async function saveHead(
  exec: Executor,
  h: { integrationId: string; repoUrl: string; branch: string; sha: string },
): Promise<void> {
  await exec.execute(
    sql`INSERT INTO local_git_heads (integration_id, repo_url, branch, sha)
        VALUES (${h.integrationId}, ${h.repoUrl}, ${h.branch}, ${h.sha})
        ON CONFLICT (integration_id, repo_url, branch) DO UPDATE SET sha = excluded.sha, seen_at = now()`,
  );
}

/** Drops heads of branches no deployment watches any more (keys as `headKey` makes them). */
export async function dropUnwatchedHeads(exec: Executor, watched: readonly string[]): Promise<void> {
  const stored = await seenHeads(exec);
  for (const key of stored.keys()) {
    if (watched.includes(key)) continue;
    const [integrationId = "", repoUrl = "", branch = ""] = key.split("|");
    await exec.execute(
      sql`DELETE FROM local_git_heads
           WHERE integration_id = ${integrationId} AND repo_url = ${repoUrl} AND branch = ${branch}`,
    );
  }
}

/** Whether this transaction won the poller's lock (one process polls at a time). */
export async function tryPollLock(exec: Executor): Promise<boolean> {
  const [lock] = await rows<{ ok: boolean }>(
    exec,
    sql`SELECT pg_try_advisory_xact_lock(${LOCAL_GIT_POLL_LOCK}) AS ok`,
  );
  return lock?.ok === true;
}
