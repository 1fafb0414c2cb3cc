import { type SQL, sql } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";
import type { StatusChange } from "../../db/schema/deployments.ts";
import type { SecretReference, Source } from "../model.ts";

/**
 * Writes on `revisions` other than status (status-store.ts), listener state (listener-store.ts) and
 * secrets (secrets-store.ts); the reconciler's leases and claims are reconciler/store.ts's.
 */

export interface NewRevision {
  id: string;
  deploymentId: string;
  seq: number;
  source: Source;
  sourceRevisionConfig: Record<string, unknown>;
  resourceSpec: Record<string, unknown> | null;
  secretReferences: SecretReference[] | null;
  buildConfig: Record<string, unknown>;
  /** The listener that serves it, or null for this server's own runtime. */
  listenerId: string | null;
  /** The revision whose secret rows it shares (unchanged secrets), or null when it gets its own. */
  secretsRevisionId: string | null;
  /** Creation time, also the time of its first status (QUEUED). */
  at: string;
}

/**
 * The statement that inserts a new revision, QUEUED: one part of the data-modifying CTE that
 * commits a revision (core/deployments/write-store.ts `commitRevision`), which gates it on its other parts.
 */
export function insertRevisionStatement(r: NewRevision, gate: SQL = sql`true`): SQL {
  const history: StatusChange[] = [{ status: "QUEUED", at: r.at }];
  const json = (v: unknown) => (v === null ? null : JSON.stringify(v));
  return sql`INSERT INTO revisions (id, deployment_id, seq, status, source, source_revision_config, resource_spec,
                               secret_references, build_config, listener_id, secrets_revision_id, status_history,
                               created_at, updated_at)
        SELECT ${r.id}::uuid, ${r.deploymentId}::uuid, ${r.seq}::int, 'QUEUED', ${r.source}::text,
               ${JSON.stringify(r.sourceRevisionConfig)}::jsonb, ${json(r.resourceSpec)}::jsonb,
               ${json(r.secretReferences)}::jsonb, ${JSON.stringify(r.buildConfig)}::jsonb, ${r.listenerId}::uuid,
               ${r.secretsRevisionId}::uuid,
               ${JSON.stringify(history)}::jsonb, ${r.at}::timestamptz, ${r.at}::timestamptz
         WHERE ${gate}`;
}

/** The commit a git source resolved to, so a redeploy or a restart builds the same one. */
export async function recordCommit(exec: Executor, revisionId: string, sha: string): Promise<void> {
  await exec.execute(
    sql`UPDATE revisions
           SET source_revision_config = jsonb_set(source_revision_config, '{repo_commit_sha}', to_jsonb(${sha}::text)),
               updated_at = now()
         WHERE id = ${revisionId}`,
  );
}

/** Faults counted so far (the failure policy gives up after a few). */
export async function setAttempts(exec: Executor, revisionId: string, attempts: number): Promise<void> {
  await exec.execute(sql`UPDATE revisions SET attempts = ${attempts} WHERE id = ${revisionId}`);
}
