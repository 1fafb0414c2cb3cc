import { randomUUID } from "node:crypto";
import type { CodehostConfig } from "../../codehost/drivers.ts";
import type { Config } from "../../config.ts";
import type { WorkspaceCaller } from "../../core/callers.ts";
import type { LockedDeployment, StoredRecord } from "../../core/deployments/read-store.ts";
import { insertRevision } from "../../core/deployments/revision-writer.ts";
import {
  checkName,
  checkResourceSpec,
  checkSecrets,
  IN_PLACE_FIELDS,
  isSet,
  revisionValuesOf,
} from "../../core/deployments/rules.ts";
import { encryptPendingSecrets, sealSecrets } from "../../core/deployments/secrets.ts";
import { insertDeployment } from "../../core/deployments/write-store.ts";
import { conflict, type FieldProblem, FieldsInvalid } from "../../core/errors.ts";
import type { DeploymentType } from "../../core/model.ts";
import { resolveResourceSpec, specOf } from "../../core/spec/stored.ts";
import type { Keyring } from "../../crypto/envelope.ts";
import type { Database } from "../../db/client.ts";
import { constraintOf, isUniqueViolation } from "../../db/errors.ts";
import { attachTracingProject } from "../tracing-projects/store.ts";
import { verifyUploadedTarball } from "../uploads/verify.ts";
import { claimIdempotencyKey, requestHash, saveIdempotentResponse } from "./idempotency.ts";
import { checkListener } from "./listener-rules.ts";
import type { CreateDeploymentBody, Deployment, SourceConfigBody } from "./schema.ts";
import {
  checkBuildOnPush,
  checkRevisionConfig,
  checkSecretReferencesFor,
  checkSourceConfig,
  hasArtifacts,
  namespaceOf,
  verifyCodehost,
} from "./source-rules.ts";

export interface CreateResult {
  /** The record: JSON text as stored, or (a replay) as the idempotency key kept it. */
  body: string | Deployment;
  replayed: boolean;
}

/** Where the apps are served: the server sets custom_url for every source but external_docker. */
export const appUrl = (apps: Pick<Config["apps"], "domain" | "port">, name: string) =>
  `http://${name}.${apps.domain}:${apps.port}`;

/** What a create reads from the config: the code host (to verify the source) and where apps are served. */
export type CreateConfig = CodehostConfig &
  Pick<Config, "apps"> & { listeners: Pick<Config["listeners"], "registryUrl"> };

function deploymentTypeOf(body: CreateDeploymentBody, items: FieldProblem[]): DeploymentType {
  const top = body.deployment_type ?? null;
  const inner = body.source_config?.deployment_type ?? null;
  if (top !== null && inner !== null && top !== inner) {
    items.push({
      loc: ["body", "source_config", "deployment_type"],
      msg: `Differs from the top-level deployment_type (${top}).`,
      type: "value_error",
    });
  }
  return top ?? inner ?? "dev";
}

/**
 * POST /v2/deployments: checks every rule, verifies a codehost source with its host, then in one
 * transaction inserts the deployment, its tracing project and (when it has its artifact) the first
 * revision. Returns the record; the reconciler is woken after commit.
 */
export async function createDeployment(
  db: Database,
  keyring: Keyring,
  config: CreateConfig,
  caller: WorkspaceCaller,
  body: CreateDeploymentBody,
  idempotencyKey: string | undefined,
): Promise<CreateResult> {
  const sc: SourceConfigBody = body.source_config ?? {};
  const values = revisionValuesOf(body.source_revision_config);
  const secrets = body.secrets ?? [];
  const refs = body.secret_references ?? null;
  const spec = resolveResourceSpec(specOf(sc.resource_spec), null);
  const makesRevision = hasArtifacts(body.source, values);

  const items: FieldProblem[] = [];
  const deploymentType = deploymentTypeOf(body, items);
  items.push(...checkName(body.name));
  items.push(
    ...checkSourceConfig(body.source, sc, {
      create: true,
      registry: config.listeners.registryUrl !== undefined,
    }),
  );
  items.push(...checkRevisionConfig(body.source, values, { withArtifact: makesRevision }));
  items.push(...checkSecrets(secrets, { knownNames: new Set() }));
  items.push(...checkSecretReferencesFor(body.source, refs, new Set(secrets.map((s) => s.name))));
  items.push(...checkResourceSpec(spec, isSet(sc.listener_id) ? { name: body.name } : undefined));
  items.push(...checkBuildOnPush(body.source, sc.build_on_push, values.repo_ref, { sentBuildOnPush: true }));
  if (items.length > 0) throw new FieldsInvalid(items);

  if (body.source === "codehost") {
    // Outside the transaction: the host may be slow, and the check reads with its own connection.
    await verifyCodehost(db.orm, config, caller.organizationId, {
      integrationId: String(sc.integration_id),
      repoUrl: String(sc.repo_url),
      repoRef: String(values.repo_ref),
    });
  }

  const storedConfig: Record<string, unknown> = {};
  for (const f of IN_PLACE_FIELDS) storedConfig[f] = sc[f] ?? null;
  if (isSet(sc.integration_id)) storedConfig.integration_id = String(sc.integration_id).toLowerCase();
  if (isSet(sc.listener_id)) storedConfig.listener_id = String(sc.listener_id).toLowerCase();
  if (body.source !== "external_docker") storedConfig.custom_url = appUrl(config.apps, body.name);

  const hash = idempotencyKey === undefined ? "" : requestHash(body);
  const result = await db.transaction(async (t) => {
    const tx = t.orm;
    if (idempotencyKey !== undefined) {
      const prior = await claimIdempotencyKey(tx, caller.workspaceId, idempotencyKey, hash);
      if (prior) return { kind: "replay" as const, body: prior.body as Deployment };
    }
    if (isSet(sc.listener_id)) {
      await checkListener(
        tx,
        caller.workspaceId,
        String(sc.listener_id).toLowerCase(),
        namespaceOf(sc.listener_config),
      );
    }
    const id = randomUUID();
    const now = new Date();
    const at = now.toISOString();
    const pendingRevision = makesRevision
      ? null
      : JSON.stringify({
          source_revision_config: values,
          resource_spec: spec,
          secret_names: secrets.map((s) => s.name),
        });
    const pendingSecrets = makesRevision ? null : encryptPendingSecrets(keyring, id, secrets);
    let stored: StoredRecord;
    try {
      stored = await insertDeployment(tx, {
        id,
        organizationId: caller.organizationId,
        workspaceId: caller.workspaceId,
        name: body.name,
        source: body.source,
        deploymentType,
        sourceConfig: storedConfig,
        imageVersion: body.image_version ?? null,
        remoteReconciled: isSet(sc.listener_id),
        pendingRevision,
        pendingSecretsEnc: pendingSecrets,
        at,
      });
    } catch (err) {
      if (isUniqueViolation(err) && constraintOf(err) === "deployments_workspace_name_key") {
        throw conflict(`A deployment named "${body.name}" already exists in this workspace.`);
      }
      throw err;
    }
    await attachTracingProject(tx, caller.workspaceId, body.name, id);
    // Also when the revision waits for framework_config_path: the PATCH that completes it trusts this.
    if (body.source === "internal_source" && values.source_tarball_path !== null) {
      await verifyUploadedTarball(tx, id, values.source_tarball_path);
    }
    if (makesRevision) {
      const locked: LockedDeployment = {
        id,
        organization_id: caller.organizationId,
        name: body.name,
        source: body.source,
        deployment_type: deploymentType,
        source_config: storedConfig,
        image_version: body.image_version ?? null,
        status: "AWAITING_DATABASE",
        latest_revision_id: null,
        revision_count: 0,
        pending_revision: null,
        pending_secrets_enc: null,
        etag: stored.etag,
      };
      stored = await insertRevision(
        { exec: t },
        locked,
        {
          source: body.source,
          config: values,
          commitSha: null,
          resourceSpec: spec,
          secretReferences: refs,
          secrets: sealSecrets(keyring, id, secrets),
          sharedSecrets: null,
        },
        now,
      );
    }
    if (idempotencyKey !== undefined) {
      await saveIdempotentResponse(tx, caller.workspaceId, idempotencyKey, {
        statusCode: 201,
        json: stored.record,
      });
    }
    return { kind: "created" as const, body: stored.record };
  });
  return { body: result.body, replayed: result.kind === "replay" };
}
