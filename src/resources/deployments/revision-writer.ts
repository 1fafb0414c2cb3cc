import { randomUUID } from "node:crypto";
import type { Keyring } from "../../crypto/envelope.ts";
import type { Executor } from "../../db/client.ts";
import { canTransition, type RevisionStatus } from "../../reconciler/states.ts";
import { insertRevisionRow, revisionContentRow, writeRevisionStatus } from "../revisions/store.ts";
import { storedRevisionConfig } from "./record.ts";
import { type RevisionValues, revisionValuesOf } from "./rules.ts";
import type { Secret, SecretReference, Source } from "./schema.ts";
import { insertRevisionSecrets, readRevisionSecrets } from "./secrets.ts";
import { type LockedDeployment, pointAtRevision } from "./store.ts";

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

const s = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** One revision of a deployment, decrypted secrets included; undefined when it is not that deployment's. */
export async function readRevisionContent(
  exec: Executor,
  keyring: Keyring,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionContent | undefined> {
  const row = await revisionContentRow(exec, deploymentId, revisionId);
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
  const buildConfig = {
    install_command: s(deployment.source_config.install_command),
    build_command: s(deployment.source_config.build_command),
  };
  await insertRevisionRow(tx, {
    id,
    deploymentId: deployment.id,
    seq,
    source: content.source,
    sourceRevisionConfig: storedRevisionConfig(content.config, content.commitSha),
    resourceSpec: content.resourceSpec,
    secretReferences: content.secretReferences,
    buildConfig,
    // A deployment's listener is immutable, so its revisions record it once (runtimeNameOf reads it).
    listenerId: s(deployment.source_config.listener_id),
    at,
  });
  await insertRevisionSecrets(tx, keyring, id, content.secrets);
  await writeRevisionStatus(
    tx,
    { deploymentId: deployment.id, exceptRevisionId: id },
    { from: SUPERSEDABLE, to: "SKIPPED", message: `Superseded by revision ${seq}.`, at },
  );
  await pointAtRevision(tx, deployment.id, id, seq, at);
  deployment.revision_count = seq;
  deployment.latest_revision_id = id;
  return id;
}
