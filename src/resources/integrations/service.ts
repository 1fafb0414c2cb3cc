import { randomBytes, randomUUID } from "node:crypto";
import { basename } from "node:path";
import { type CodehostConfig, driverFor, type IntegrationRow } from "../../codehost/drivers.ts";
import { InstallationNotFound } from "../../codehost/errors.ts";
import { githubAppOf } from "../../codehost/github/client.ts";
import { installationAccount } from "../../codehost/github/driver.ts";
import type { CodehostRepository } from "../../codehost/interface.ts";
import { resolveAllowedDir } from "../../codehost/local-git/paths.ts";
import { findIntegration } from "../../codehost/store.ts";
import { inAuditedTransaction } from "../../core/audit/scope.ts";
import type { OrganizationCaller } from "../../core/callers.ts";
import { conflict, forbidden, invalid, notFound } from "../../core/errors.ts";
import { iso } from "../../core/shapes.ts";
import { encryptionContext, type Keyring } from "../../crypto/envelope.ts";
import type { Executor } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import type { IntegrationConfig } from "../../db/schema/codehost.ts";
import type { CreateIntegrationBody, Integration, IntegrationWithSecret } from "./schema.ts";
import {
  deleteIntegrationRow,
  deploymentUsing,
  insertIntegrationRow,
  integrationRows,
  setWebhookSecret,
} from "./store.ts";

type Caller = OrganizationCaller;

export function toIntegration(row: IntegrationRow): Integration {
  const c = row.config;
  return {
    id: row.id,
    organization_id: row.organizationId,
    kind: row.kind,
    name: row.name,
    path: "path" in c ? c.path : null,
    installation_id: "installation_id" in c ? c.installation_id : null,
    created_at: iso(row.createdAt),
    has_webhook_secret: row.webhookSecretEnc !== null,
  };
}

/** Where an integration's webhook secret is stored: what its envelope is bound to. */
export const webhookSecretContext = (id: string) =>
  encryptionContext("integrations", "webhook_secret_enc", id);

/** A push webhook secret: `swhk_` and 32 random bytes, base64url (what the code host signs with). */
const newWebhookSecret = () => `swhk_${randomBytes(32).toString("base64url")}`;

export async function listIntegrations(exec: Executor, caller: Caller): Promise<Integration[]> {
  const list = await integrationRows(exec, caller.organizationId);
  return list.map(toIntegration);
}

/** Integrations belong to the whole organization, so a key bound to one workspace cannot change them. */
function assertOrganizationWide(caller: Caller): void {
  if (caller.boundWorkspaceId !== null) {
    throw forbidden("A workspace-bound API key cannot change the organization's code-host integrations.");
  }
}

/** The stored config and default name: the directory must be allowed, the installation must exist. */
async function resolveTarget(
  config: CodehostConfig,
  body: CreateIntegrationBody,
): Promise<{ config: IntegrationConfig; name: string }> {
  if (body.kind === "local_git") {
    if (body.installation_id !== undefined) {
      throw invalid(["body", "installation_id"], "Only for kind github.");
    }
    if (body.path === undefined)
      throw invalid(["body", "path"], "Field required for kind local_git.", "missing");
    const allowed = await resolveAllowedDir(body.path, config.localGitRoots);
    if (!allowed.ok) throw invalid(["body", "path"], allowed.reason);
    return { config: { path: allowed.path }, name: basename(allowed.path) || allowed.path };
  }
  if (body.path !== undefined) throw invalid(["body", "path"], "Only for kind local_git.");
  if (body.installation_id === undefined) {
    throw invalid(["body", "installation_id"], "Field required for kind github.", "missing");
  }
  const app = githubAppOf(config);
  if (!app) {
    throw invalid(
      ["body", "kind"],
      "The GitHub App is not configured on this server (SLIPWAY_GITHUB_APP_ID and SLIPWAY_GITHUB_PRIVATE_KEY).",
    );
  }
  const account = await installationAccount(app, body.installation_id).catch((err: unknown) => {
    throw err instanceof InstallationNotFound ? invalid(["body", "installation_id"], err.message) : err;
  });
  return { config: { installation_id: body.installation_id }, name: account };
}

/** Creates the integration with its push webhook secret, which the answer shows this once. */
export async function createIntegration(
  exec: Executor,
  env: { config: CodehostConfig; keyring: Keyring },
  caller: Caller,
  body: CreateIntegrationBody,
): Promise<IntegrationWithSecret> {
  assertOrganizationWide(caller);
  const target = await resolveTarget(env.config, body);
  const id = randomUUID();
  const secret = newWebhookSecret();
  try {
    const row = await inAuditedTransaction(exec, (tx) =>
      insertIntegrationRow(tx, {
        id,
        organizationId: caller.organizationId,
        kind: body.kind,
        config: target.config,
        name: body.name ?? target.name,
        webhookSecretEnc: env.keyring.encrypt(secret, webhookSecretContext(id)),
      }),
    );
    return { ...toIntegration(row), webhook_secret: secret };
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw conflict(
        body.kind === "local_git"
          ? "This organization already has an integration for this directory."
          : "This organization already has an integration for this installation.",
      );
    }
    throw err;
  }
}

async function ownIntegration(exec: Executor, caller: Caller, id: string): Promise<IntegrationRow> {
  const row = await findIntegration(exec, id, caller.organizationId);
  if (!row) throw notFound("Code-host integration not found.");
  return row;
}

/** Deletes an integration no live deployment builds from (their next revision could not be fetched). */
export async function deleteIntegration(exec: Executor, caller: Caller, id: string): Promise<Integration> {
  assertOrganizationWide(caller);
  const row = await ownIntegration(exec, caller, id);
  await inAuditedTransaction(exec, async (tx) => {
    const used = await deploymentUsing(tx, caller.organizationId, row.id);
    if (used !== undefined) {
      throw conflict(`Deployment ${used} builds from this integration: delete it first.`);
    }
    await deleteIntegrationRow(tx, caller.organizationId, id);
  });
  return toIntegration(row);
}

/** A new push webhook secret, shown this once; the old one stops working at once. */
export async function rotateWebhookSecret(
  exec: Executor,
  keyring: Keyring,
  caller: Caller,
  id: string,
): Promise<IntegrationWithSecret> {
  assertOrganizationWide(caller);
  const row = await ownIntegration(exec, caller, id);
  const secret = newWebhookSecret();
  const secretEnc = keyring.encrypt(secret, webhookSecretContext(row.id));
  if (
    !(await inAuditedTransaction(exec, (tx) =>
      setWebhookSecret(tx, caller.organizationId, row.id, secretEnc),
    ))
  ) {
    throw notFound("Code-host integration not found.");
  }
  return { ...toIntegration({ ...row, webhookSecretEnc: secretEnc }), webhook_secret: secret };
}

/** Every repository the integration makes available, as the interface's records. */
export async function listIntegrationRepositories(
  exec: Executor,
  config: CodehostConfig,
  caller: Caller,
  id: string,
): Promise<CodehostRepository[]> {
  const row = await ownIntegration(exec, caller, id);
  const repos = await driverFor(config, row).listRepositories();
  return repos.map((r) => ({
    host_integration_id: row.id,
    id: r.id,
    name: r.name,
    owner: r.owner,
    url: r.url,
    default_branch: r.default_branch,
  }));
}
