import { randomUUID } from "node:crypto";
import type { Keyring } from "../../crypto/envelope.ts";
import type { Executor } from "../../db/client.ts";
import { MASK, type SecretReference, type Source } from "../model.ts";
import { revisionContentRow } from "../revisions/read-store.ts";
import {
  insertSecretsStatement,
  type SealedSecret,
  type StoredSecret,
  secretRows,
} from "../revisions/secrets-store.ts";
import { canTransition, type RevisionStatus } from "../revisions/states.ts";
import { revisionStatusStatement } from "../revisions/status-store.ts";
import { insertRevisionStatement } from "../revisions/write-store.ts";
import type { LatestRevision, LockedDeployment, WrittenRecord } from "./read-store.ts";
import { type REVISION_FIELDS, type RevisionValues, revisionValuesOf } from "./rules.ts";
import { nextSecrets, unchangedRows } from "./secrets.ts";
import { commitRevision, type LockedWrite, type WriteTarget } from "./write-store.ts";

/** What a new revision starts from: a revision's source, config, spec, references and secrets. */
export interface RevisionContent {
  source: Source;
  config: RevisionValues;
  /** Only a redeploy carries one: the commit it pins. */
  commitSha: string | null;
  resourceSpec: Record<string, unknown> | null;
  secretReferences: SecretReference[] | null;
  /** Envelopes bound to the deployment (secrets.ts); unchanged values keep theirs. */
  secrets: SealedSecret[];
  /** The stored rows `secrets` are, unchanged (secrets.ts, unchangedRows): shared, not copied. */
  sharedSecrets: StoredSecret[] | null;
}

const s = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** One revision of a deployment, its secrets as envelopes for a copy; undefined when it is not that deployment's. */
export async function readRevisionContent(
  exec: Executor,
  keyring: Keyring,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionContent | undefined> {
  const row = await revisionContentRow(exec, deploymentId, revisionId);
  if (!row) return undefined;
  const stored = await secretRows(exec, revisionId);
  const secrets = nextSecrets(keyring, deploymentId, stored, null);
  return {
    source: row.source,
    config: revisionValuesOf(row.source_revision_config),
    commitSha: s(row.source_revision_config.repo_commit_sha),
    resourceSpec: row.resource_spec,
    secretReferences: row.secret_references,
    secrets,
    sharedSecrets: unchangedRows(secrets, stored),
  };
}

const SUPERSEDABLE: RevisionStatus[] = (["QUEUED", "AWAITING_BUILD"] as const).filter((st) =>
  canTransition(st, "SKIPPED"),
);

/** The new record and row version, and the revision as the next PATCH builds on it. */
type Written = WrittenRecord & { revisionId: string; latest: LatestRevision };

/**
 * Inserts the next revision (QUEUED) of a locked deployment with its secrets, skips the older ones
 * that have not started building, and points the deployment at it — one statement, announced to
 * the reconciler once committed (commitRevision). The deployment's in-place fields are written as
 * `deployment` has them. Returns the new record and row version, and the revision (its id, content
 * and secret envelopes); `deployment` is moved on to it.
 *
 * On a WriteTarget with a version (the row version `deployment` was read at, without a lock), the
 * statement is its own transaction and writes only while the row is still that version: undefined
 * means something changed the deployment since, and nothing was written.
 */
export async function insertRevision(
  target: LockedWrite,
  deployment: LockedDeployment,
  content: RevisionContent,
  now: Date,
): Promise<Written>;
export async function insertRevision(
  target: WriteTarget,
  deployment: LockedDeployment,
  content: RevisionContent,
  now: Date,
): Promise<Written | undefined>;
export async function insertRevision(
  target: WriteTarget,
  deployment: LockedDeployment,
  content: RevisionContent,
  now: Date,
): Promise<Written | undefined> {
  const id = randomUUID();
  const seq = deployment.revision_count + 1;
  // Unchanged secrets stay in the rows that hold them; changed ones get rows of this revision.
  const shared = content.sharedSecrets;
  const secrets: StoredSecret[] =
    shared ??
    content.secrets.map((x) => ({ id: randomUUID(), revision_id: id, deployment_id: deployment.id, ...x }));
  const at = now.toISOString();
  const sourceRevisionConfig = storedRevisionConfig(content.config, content.commitSha);
  const revision = {
    id,
    deploymentId: deployment.id,
    seq,
    source: content.source,
    sourceRevisionConfig,
    resourceSpec: content.resourceSpec,
    secretReferences: content.secretReferences,
    buildConfig: {
      install_command: s(deployment.source_config.install_command),
      build_command: s(deployment.source_config.build_command),
    },
    // A deployment's listener is immutable, so its revisions record it once (runtimeNameOf reads it).
    listenerId: s(deployment.source_config.listener_id),
    secretsRevisionId: shared?.[0]?.revision_id ?? null,
    at,
  };
  const stored = await commitRevision(target, {
    insertRevision: (gate) => insertRevisionStatement(revision, gate),
    insertSecrets:
      shared === null && secrets.length > 0
        ? (gate) => insertSecretsStatement(id, deployment.id, secrets, gate)
        : null,
    skipOlder:
      seq > 1
        ? (gate) =>
            revisionStatusStatement(
              { deploymentId: deployment.id, exceptRevisionId: id },
              { from: SUPERSEDABLE, to: "SKIPPED", message: `Superseded by revision ${seq}.`, at },
              gate,
            )
        : null,
    deploymentId: deployment.id,
    revisionId: id,
    seq,
    content: {
      source_revision_config: sourceRevisionConfig,
      resource_spec: content.resourceSpec,
      secret_references: content.secretReferences,
      secrets: secrets.map((x) => ({ name: x.name, value: MASK })),
    },
    sourceConfig: deployment.source_config,
    imageVersion: deployment.image_version,
    at,
  });
  if (!stored) return undefined;
  deployment.revision_count = seq;
  deployment.latest_revision_id = id;
  const latest: LatestRevision = {
    id,
    source_revision_config: sourceRevisionConfig,
    resource_spec: content.resourceSpec,
    secret_references: content.secretReferences,
    secret_names: secrets.map((x) => x.name),
    secrets,
  };
  return { ...stored, revisionId: id, latest };
}

/** Stored source_revision_config: all five keys, null when unset. */
function storedRevisionConfig(
  values: Record<(typeof REVISION_FIELDS)[number], string | null>,
  commitSha: string | null,
): Record<string, string | null> {
  return { ...values, repo_commit_sha: commitSha };
}
