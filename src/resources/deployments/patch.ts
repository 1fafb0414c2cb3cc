// Why over 300 lines: one operation, PATCH of a deployment: its rules (planPatch) and its two write paths (unlocked, then under the row lock).
import { isDeepStrictEqual } from "node:util";
import type { CodehostConfig } from "../../codehost/drivers.ts";
import type { WorkspaceCaller } from "../../core/callers.ts";
import {
  findDeploymentRecord,
  type LockedDeployment,
  type PatchState,
  readPatchState,
} from "../../core/deployments/read-store.ts";
import { insertRevision, type RevisionContent } from "../../core/deployments/revision-writer.ts";
import {
  checkResourceSpec,
  checkSecrets,
  IMMUTABLE_FIELDS,
  IN_PLACE_FIELDS,
  isSet,
  REVISION_FIELDS,
  revisionValuesOf,
} from "../../core/deployments/rules.ts";
import {
  decryptPendingSecrets,
  nextSecrets,
  sealSecrets,
  unchangedRows,
  unmask,
} from "../../core/deployments/secrets.ts";
import { updateInPlace, type WriteTarget } from "../../core/deployments/write-store.ts";
import { badRequest, type FieldProblem, FieldsInvalid, notFound } from "../../core/errors.ts";
import type { Secret, Source } from "../../core/model.ts";
import { resolveResourceSpec, specOf } from "../../core/spec/stored.ts";
import type { Keyring } from "../../crypto/envelope.ts";
import type { Database, Reader, Transaction } from "../../db/client.ts";
import { verifyUploadedTarball } from "../uploads/verify.ts";
import type { PatchStates } from "./patch-states.ts";
import { checkIfMatch } from "./preconditions.ts";
import type { PatchDeploymentBody } from "./schema.ts";
import {
  builtForListener,
  checkBuildOnPush,
  checkRevisionConfig,
  checkSecretReferencesFor,
  checkSourceConfig,
  keepAllowed,
  needsRegistry,
  verifyCodehost,
} from "./source-rules.ts";

type State = PatchState;

async function readState(
  exec: Reader | Transaction,
  caller: WorkspaceCaller,
  id: string,
  lock: boolean,
): Promise<State> {
  const state = await readPatchState(exec, caller.workspaceId, id, lock);
  if (!state) throw notFound("Deployment not found.");
  return state;
}

/** Whether a PATCH makes a revision: it does whenever it sends a revision field, even one equal to the current value. */
export function createsRevision(body: PatchDeploymentBody): boolean {
  return (
    isSet(body.revision_source) ||
    isSet(body.secrets) ||
    isSet(body.secret_references) ||
    isSet(body.source_config?.resource_spec) ||
    REVISION_FIELDS.some((f) => isSet(body.source_revision_config?.[f]))
  );
}

interface Plan {
  sourceConfig: Record<string, unknown>;
  imageVersion: string | null;
  inPlaceChanged: boolean;
  revision: (Omit<RevisionContent, "secrets" | "sharedSecrets"> & { sentSecrets: Secret[] | null }) | null;
  codehostCheck: { integrationId: string; repoUrl: string; repoRef: string } | null;
  tarballCheck: string | null;
}

const sameId = (a: unknown, b: unknown) =>
  typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();

function sameImmutable(field: string, sent: unknown, current: unknown): boolean {
  if (field === "listener_config") {
    const norm = (v: unknown) =>
      v && typeof v === "object"
        ? { k8s_namespace: (v as { k8s_namespace?: unknown }).k8s_namespace ?? null }
        : v;
    return isDeepStrictEqual(norm(sent), norm(current ?? null));
  }
  if (field === "repo_url") return sent === current;
  return sameId(sent, current);
}

/**
 * Every rule of a PATCH against one state of the deployment, without writing: 400 for changes to
 * immutable fields or a deployment being deleted, 422 for field rules. Pure, so it runs once
 * before the transaction (to know what to verify with the code host) and again under the lock.
 */
function planPatch(state: State, body: PatchDeploymentBody, registry: boolean): Plan {
  const d = state.deployment;
  if (d.status === "AWAITING_DELETE") throw badRequest("The deployment is being deleted.");
  const sc = body.source_config ?? {};
  const immutableTop: [string, unknown, unknown][] = [
    ["name", body.name, d.name],
    ["source", body.source, d.source],
    ["deployment_type", body.deployment_type, d.deployment_type],
    ["source_config.deployment_type", sc.deployment_type, d.deployment_type],
  ];
  for (const [field, sent, current] of immutableTop) {
    if (isSet(sent) && sent !== current) throw badRequest(`${field} cannot be changed after creation.`);
  }

  const items: FieldProblem[] = checkSourceConfig(d.source, sc, {
    create: false,
    currentCustomUrl: d.source_config.custom_url,
    currentListenerId: d.source_config.listener_id,
    registry,
  });
  if (items.length > 0) throw new FieldsInvalid(items);
  for (const field of IMMUTABLE_FIELDS) {
    if (isSet(sc[field]) && !sameImmutable(field, sc[field], d.source_config[field])) {
      throw badRequest(`source_config.${field} cannot be changed after creation.`);
    }
  }

  const sourceConfig = { ...d.source_config };
  let inPlaceChanged = false;
  for (const field of IN_PLACE_FIELDS) {
    if (IMMUTABLE_FIELDS.includes(field) || !isSet(sc[field])) continue;
    if (field === "custom_url" && d.source !== "external_docker") continue;
    if (!isDeepStrictEqual(sc[field], sourceConfig[field])) {
      sourceConfig[field] = sc[field];
      inPlaceChanged = true;
    }
  }
  let imageVersion = d.image_version;
  if (isSet(body.image_version) && body.image_version !== d.image_version) {
    imageVersion = body.image_version ?? null;
    inPlaceChanged = true;
  }

  const sentValues = revisionValuesOf(body.source_revision_config);
  let revision: Plan["revision"] = null;
  let codehostCheck: Plan["codehostCheck"] = null;
  let tarballCheck: string | null = null;
  const latest = state.latest;
  const revSource: Source = body.revision_source ?? d.source;

  if (createsRevision(body)) {
    // The previous values carry over where the revision's source uses them (a source switch
    // drops the others); before the first revision, the values given at create are the previous.
    const pending = latest === null ? d.pending_revision : null;
    const previous = latest ? latest.source_revision_config : pending?.source_revision_config;
    const values = keepAllowed(revSource, revisionValuesOf(previous));
    for (const f of REVISION_FIELDS) if (sentValues[f] !== null) values[f] = sentValues[f];

    items.push(...checkRevisionConfig(revSource, values, { withArtifact: true }));
    if (isSet(d.source_config.listener_id) && builtForListener(revSource) && !registry) {
      items.push({ loc: ["body", "revision_source"], msg: needsRegistry(revSource), type: "value_error" });
    }
    if (
      revSource === "codehost" &&
      (!isSet(d.source_config.integration_id) || !isSet(d.source_config.repo_url))
    ) {
      items.push({
        loc: ["body", "revision_source"],
        msg: "A codehost revision needs a deployment with source_config.integration_id and repo_url.",
        type: "value_error",
      });
    }

    const baseSpec = latest ? latest.resource_spec : (pending?.resource_spec ?? null);
    const sentSpec = specOf(sc.resource_spec);
    const resourceSpec = resolveResourceSpec(sentSpec, baseSpec);
    items.push(
      ...checkResourceSpec(
        resourceSpec,
        isSet(d.source_config.listener_id) ? { previous: baseSpec } : undefined,
      ),
    );

    const knownNames = new Set(latest ? (latest.secret_names ?? []) : (pending?.secret_names ?? []));
    const sentSecrets = body.secrets ?? null;
    if (sentSecrets !== null) items.push(...checkSecrets(sentSecrets, { knownNames }));
    const finalNames = new Set(sentSecrets ? sentSecrets.map((s) => s.name) : knownNames);

    // An external_docker revision keeps the previous references unless new ones are sent; any
    // other source has none, and sending some is what the rule refuses.
    const secretReferences =
      revSource === "external_docker" ? (body.secret_references ?? latest?.secret_references ?? null) : null;
    const checkedReferences =
      revSource === "external_docker" ? secretReferences : (body.secret_references ?? null);
    items.push(...checkSecretReferencesFor(revSource, checkedReferences, finalNames));

    revision = {
      source: revSource,
      config: values,
      commitSha: null,
      resourceSpec,
      secretReferences,
      sentSecrets,
    };
    if (revSource === "codehost" && sentValues.repo_ref !== null) {
      codehostCheck = {
        integrationId: String(d.source_config.integration_id),
        repoUrl: String(d.source_config.repo_url),
        repoRef: sentValues.repo_ref,
      };
    }
    if (revSource === "internal_source" && sentValues.source_tarball_path !== null) {
      tarballCheck = sentValues.source_tarball_path;
    }
  }

  const ref = revision ? revision.config.repo_ref : revisionValuesOf(latest?.source_revision_config).repo_ref;
  const sentBuildOnPush = isSet(sc.build_on_push);
  items.push(...checkBuildOnPush(d.source, sourceConfig.build_on_push, ref, { sentBuildOnPush }));
  if (items.length > 0) throw new FieldsInvalid(items);
  return { sourceConfig, imageVersion, inPlaceChanged, revision, codehostCheck, tarballCheck };
}

export interface PatchResult {
  /** The new record, JSON text as stored. */
  record: string;
  etag: string;
  revisionId: string | null;
}

/** A PATCH's answer and the deployment's state after it (what the next PATCH may start from). */
interface Written {
  result: PatchResult;
  next: State;
}

/**
 * Unlocked attempts before a PATCH takes the row lock: a PATCH reads, plans and writes in one
 * statement guarded by the row version, and reads again when another write got in between. Only
 * writes racing on one deployment retry; after this many the lock makes them take turns.
 */
const OPTIMISTIC_ATTEMPTS = 3;

/**
 * PATCH /v2/deployments/{id}: in-place SourceConfig changes and, when the body asks for one, a new
 * revision. No lock in the common case: a write statement guarded by the row version, which is its
 * own transaction and returns the record (announced to the reconciler once committed), planned on the state this
 * process's last PATCH of the deployment left (`states`: one round trip) or on a fresh read (row
 * and its version, latest revision, its secrets: two). When other writes keep changing the
 * deployment, the same plan runs under the row lock in a transaction.
 */
export async function patchDeployment(
  db: Database,
  keyring: Keyring,
  config: CodehostConfig & { listeners: { registryUrl: string | undefined } },
  states: PatchStates,
  caller: WorkspaceCaller,
  id: string,
  body: PatchDeploymentBody,
  ifMatch: string | undefined,
): Promise<PatchResult> {
  const registry = config.listeners.registryUrl !== undefined;
  let verified: Plan["codehostCheck"] = null;
  /** Undefined: nothing was written (another version, or a kept state that cannot answer). */
  const attempt = async (target: WriteTarget, state: State, kept = false): Promise<Written | undefined> => {
    let plan: Plan;
    try {
      if (ifMatch !== undefined) checkIfMatch(ifMatch, state.deployment.etag);
      plan = planPatch(state, body, registry);
    } catch (error) {
      // A kept state may be behind: a refusal is only ever decided on a fresh read.
      if (kept) return undefined;
      throw error;
    }
    // Nor is "nothing to change", which answers with the record without a guarded write.
    if (kept && !plan.revision && !plan.inPlaceChanged) return undefined;
    if (plan.codehostCheck && !isDeepStrictEqual(plan.codehostCheck, verified)) {
      // The host check cannot run inside the transaction (it is slow and uses its own connection).
      if (target.ifVersion === undefined) {
        throw new Error("codehost source changed between the check and the write");
      }
      await verifyCodehost(db.orm, config, caller.organizationId, plan.codehostCheck);
      verified = plan.codehostCheck;
    }
    if (plan.tarballCheck !== null) await verifyUploadedTarball(target.exec.orm, id, plan.tarballCheck);
    return writePlan(target, keyring, caller.workspaceId, state, plan);
  };
  const done = (written: Written) => {
    states.remember(caller.workspaceId, id, written.next);
    return written.result;
  };

  const kept = states.get(caller.workspaceId, id);
  if (kept) {
    const written = await attempt({ exec: db, ifVersion: kept.version }, kept, true);
    if (written) return done(written);
    states.forget(caller.workspaceId, id, kept.version);
  }
  for (let i = 0; i < OPTIMISTIC_ATTEMPTS; i++) {
    const state = await readState(db, caller, id, false);
    const written = await attempt({ exec: db, ifVersion: state.version }, state);
    if (written) return done(written);
  }
  const written = await db.transaction(async (tx) => {
    const locked = await attempt({ exec: tx }, await readState(tx, caller, id, true));
    if (!locked) throw new Error("deployment vanished under its row lock");
    return locked;
  });
  // Kept once committed: the version is the transaction's.
  return done(written);
}

/** Writes a plan; undefined when the target's version is given and the deployment is no longer it. */
async function writePlan(
  target: WriteTarget,
  keyring: Keyring,
  workspaceId: string,
  state: State,
  plan: Plan,
): Promise<Written | undefined> {
  const d = { ...state.deployment, source_config: plan.sourceConfig, image_version: plan.imageVersion };
  const now = new Date();
  if (plan.revision) {
    const { sentSecrets, ...content } = plan.revision;
    const stored = state.latest?.secrets;
    const secrets = stored
      ? nextSecrets(keyring, d.id, stored, sentSecrets)
      : pendingSecrets(keyring, d, sentSecrets);
    const sharedSecrets = stored ? unchangedRows(secrets, stored) : null;
    const written = await insertRevision(target, d, { ...content, secrets, sharedSecrets }, now);
    if (!written) return undefined;
    // What the write made of the row: the pending values are spent, the revision is the latest.
    const deployment = { ...d, pending_revision: null, pending_secrets_enc: null, etag: written.etag };
    return {
      result: { record: written.record, etag: written.etag, revisionId: written.revisionId },
      next: { deployment, version: written.version, latest: written.latest },
    };
  }
  if (plan.inPlaceChanged) {
    const written = await updateInPlace(
      target,
      d.id,
      plan.sourceConfig,
      plan.imageVersion,
      now.toISOString(),
    );
    if (!written) return undefined;
    return {
      result: { record: written.record, etag: written.etag, revisionId: null },
      next: { ...state, deployment: { ...d, etag: written.etag }, version: written.version },
    };
  }
  const current = await findDeploymentRecord(target.exec.orm, workspaceId, d.id);
  if (!current) throw new Error("deployment vanished under its row lock");
  return { result: { ...current, revisionId: null }, next: state };
}

/** Before the first revision: the values given at create, with the sent list applied. */
function pendingSecrets(keyring: Keyring, d: LockedDeployment, sent: Secret[] | null) {
  const base = decryptPendingSecrets(keyring, d.id, d.pending_secrets_enc);
  return sealSecrets(keyring, d.id, sent ? unmask(sent, base) : base);
}
