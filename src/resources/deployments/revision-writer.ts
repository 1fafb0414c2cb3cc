import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Keyring } from "../../crypto/envelope.ts";
import { type Executor, rows } from "../../db/client.ts";
import type { StatusChange } from "../../db/schema/deployments.ts";
import { canTransition, type RevisionStatus, statusMessage } from "../revisions/states.ts";
import { storedRevisionConfig } from "./record.ts";
import { type RevisionValues, revisionValuesOf } from "./rules.ts";
import type { DeploymentType, Secret, SecretReference, Source } from "./schema.ts";
import { insertRevisionSecrets, readRevisionSecrets } from "./secrets.ts";

/** The deployment row as a write sees it, locked for the rest of the transaction. */
export interface LockedDeployment {
  id: string;
  organization_id: string;
  name: string;
  source: Source;
  deployment_type: DeploymentType;
  source_config: Record<string, unknown>;
  image_version: string | null;
  status: string;
  latest_revision_id: string | null;
  revision_count: number;
  /** What a create without an artifact was given, for the first revision (see 0002_deployments.sql). */
  pending_revision: {
    source_revision_config?: Record<string, unknown>;
    resource_spec?: Record<string, unknown> | null;
    secret_names?: string[];
  } | null;
  pending_secrets_enc: string | null;
}

/** `SELECT … FOR UPDATE`: revision-creating writes of one deployment run one after the other. */
export async function lockDeployment(
  exec: Executor,
  workspaceId: string,
  id: string,
): Promise<LockedDeployment | undefined> {
  const [row] = await rows<LockedDeployment>(
    exec,
    sql`SELECT id, organization_id, name, source, deployment_type, source_config, image_version, status,
               latest_revision_id, revision_count, pending_revision, pending_secrets_enc
          FROM deployments WHERE id = ${id} AND workspace_id = ${workspaceId} FOR UPDATE`,
  );
  return row;
}

/** What a new revision starts from: a revision's source, config, spec, references and secrets. */
export interface RevisionContent {
  source: Source;
  config: RevisionValues;
  /** Only a redeploy carries one: the commit it pins. */
  commitSha: string | null;
  resourceSpec: Record<string, unknown> | null;
  secretReferences: SecretReference[] | null;
  secrets: Secret[];
}

interface RevisionRow {
  source: Source;
  source_revision_config: Record<string, unknown>;
  resource_spec: Record<string, unknown> | null;
  secret_references: SecretReference[] | null;
}

const s = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** One revision of a deployment, decrypted secrets included; undefined when it is not that deployment's. */
export async function readRevisionContent(
  exec: Executor,
  keyring: Keyring,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionContent | undefined> {
  const [row] = await rows<RevisionRow>(
    exec,
    sql`SELECT source, source_revision_config, resource_spec, secret_references
          FROM revisions WHERE id = ${revisionId} AND deployment_id = ${deploymentId}`,
  );
  if (!row) return undefined;
  return {
    source: row.source,
    config: revisionValuesOf(row.source_revision_config),
    commitSha: s(row.source_revision_config.repo_commit_sha),
    resourceSpec: row.resource_spec,
    secretReferences: row.secret_references,
    secrets: await readRevisionSecrets(exec, keyring, revisionId),
  };
}

const SUPERSEDABLE: RevisionStatus[] = (["QUEUED", "AWAITING_BUILD"] as const).filter((st) =>
  canTransition(st, "SKIPPED"),
);

/**
 * Inserts the next revision (QUEUED) of a locked deployment with its encrypted secrets, skips the
 * older ones that have not started building, and points the deployment at it. The caller holds
 * the row lock and notifies the reconciler after commit.
 */
export async function insertRevision(
  tx: Executor,
  keyring: Keyring,
  deployment: LockedDeployment,
  content: RevisionContent,
  now: Date,
): Promise<string> {
  const id = randomUUID();
  const seq = deployment.revision_count + 1;
  const at = now.toISOString();
  const history: StatusChange[] = [{ status: "QUEUED", at }];
  const buildConfig = {
    install_command: s(deployment.source_config.install_command),
    build_command: s(deployment.source_config.build_command),
  };
  await tx.execute(
    sql`INSERT INTO revisions (id, deployment_id, seq, status, source, source_revision_config, resource_spec,
                               secret_references, build_config, status_history, created_at, updated_at)
        VALUES (${id}, ${deployment.id}, ${seq}, 'QUEUED', ${content.source},
                ${JSON.stringify(storedRevisionConfig(content.config, content.commitSha))}::jsonb,
                ${content.resourceSpec === null ? null : JSON.stringify(content.resourceSpec)}::jsonb,
                ${content.secretReferences === null ? null : JSON.stringify(content.secretReferences)}::jsonb,
                ${JSON.stringify(buildConfig)}::jsonb, ${JSON.stringify(history)}::jsonb, ${at}, ${at})`,
  );
  await insertRevisionSecrets(tx, keyring, id, content.secrets);
  const skipped: StatusChange = { status: "SKIPPED", at, message: `Superseded by revision ${seq}.` };
  await tx.execute(
    sql`UPDATE revisions
           SET status = 'SKIPPED', updated_at = ${at}, status_message = ${statusMessage("SKIPPED", skipped.message)},
               status_history = status_history || ${JSON.stringify([skipped])}::jsonb
         WHERE deployment_id = ${deployment.id} AND id <> ${id}
           AND status IN (${sql.join(
             SUPERSEDABLE.map((st) => sql`${st}`),
             sql`, `,
           )})`,
  );
  await tx.execute(
    sql`UPDATE deployments
           SET revision_count = ${seq}, latest_revision_id = ${id}, updated_at = ${at},
               pending_revision = NULL, pending_secrets_enc = NULL
         WHERE id = ${deployment.id}`,
  );
  deployment.revision_count = seq;
  deployment.latest_revision_id = id;
  return id;
}
