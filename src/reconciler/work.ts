import { sql } from "drizzle-orm";
import type { Keyring } from "../crypto/envelope.ts";
import { encryptionContext } from "../crypto/registry.ts";
import { type Executor, rows } from "../db/client.ts";
import type { DeploymentStatus, RevisionStatus } from "./states.ts";

/** A revision with what the reconciler needs of its deployment, read in one query. */
export interface RevisionWork {
  id: string;
  deploymentId: string;
  seq: number;
  status: RevisionStatus;
  source: string;
  sourceRevisionConfig: Record<string, unknown>;
  resourceSpec: Record<string, unknown> | null;
  /** `secret_references` of the revision (external_docker), resolved at deploy. */
  secretReferences?: unknown;
  buildConfig: Record<string, unknown>;
  attempts: number;
  deploymentName: string;
  deploymentStatus: DeploymentStatus;
  deploymentSourceConfig: Record<string, unknown>;
  organizationId: string;
  activeRevisionId: string | null;
}

interface WorkRow {
  id: string;
  deployment_id: string;
  seq: number;
  status: RevisionStatus;
  source: string;
  source_revision_config: Record<string, unknown>;
  resource_spec: Record<string, unknown> | null;
  secret_references: unknown;
  build_config: Record<string, unknown>;
  attempts: number;
  deployment_name: string;
  deployment_status: DeploymentStatus;
  deployment_source_config: Record<string, unknown>;
  organization_id: string;
  active_revision_id: string | null;
}

export async function loadWork(exec: Executor, revisionId: string): Promise<RevisionWork | undefined> {
  const [r] = await rows<WorkRow>(
    exec,
    sql`SELECT r.id, r.deployment_id, r.seq, r.status, r.source, r.source_revision_config, r.resource_spec,
               r.secret_references, r.build_config, r.attempts, d.name AS deployment_name, d.status AS deployment_status,
               d.source_config AS deployment_source_config, d.organization_id, d.active_revision_id
          FROM revisions r JOIN deployments d ON d.id = r.deployment_id
         WHERE r.id = ${revisionId}`,
  );
  if (!r) return undefined;
  return {
    id: r.id,
    deploymentId: r.deployment_id,
    seq: r.seq,
    status: r.status,
    source: r.source,
    sourceRevisionConfig: r.source_revision_config ?? {},
    resourceSpec: r.resource_spec,
    secretReferences: r.secret_references,
    buildConfig: r.build_config ?? {},
    attempts: r.attempts,
    deploymentName: r.deployment_name,
    deploymentStatus: r.deployment_status,
    deploymentSourceConfig: r.deployment_source_config ?? {},
    organizationId: r.organization_id,
    activeRevisionId: r.active_revision_id,
  };
}

/** The revision's secrets, decrypted: they go only into the app's environment and the log redactor. */
export async function revisionSecrets(
  exec: Executor,
  keyring: Keyring,
  revisionId: string,
): Promise<Record<string, string>> {
  const found = await rows<{ id: string; name: string; value_enc: string }>(
    exec,
    sql`SELECT id, name, value_enc FROM revision_secrets WHERE revision_id = ${revisionId} ORDER BY position`,
  );
  const env: Record<string, string> = {};
  for (const s of found) {
    env[s.name] = keyring.decrypt(s.value_enc, encryptionContext("revision_secrets", "value_enc", s.id));
  }
  return env;
}

/** A string field of a jsonb config, or undefined when absent, null or empty. */
export function textField(obj: Record<string, unknown>, key: string): string | undefined {
  const v = obj[key];
  return typeof v === "string" && v !== "" ? v : undefined;
}
