import { createHash } from "node:crypto";
import type { Reader } from "../../db/client.ts";
import { type IN_PLACE_FIELDS, type REVISION_FIELDS, revisionValuesOf } from "./rules.ts";
import { type Deployment, MASK, type SourceConfig, type SourceRevisionConfig } from "./schema.ts";
import { type DeploymentRow, findDeploymentRow } from "./store.ts";

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

export function toSourceRevisionConfig(stored: Record<string, unknown> | null): SourceRevisionConfig {
  return { ...revisionValuesOf(stored), repo_commit_sha: str(stored?.repo_commit_sha) };
}

function toSourceConfig(stored: Record<string, unknown>, resourceSpec: Record<string, unknown> | null) {
  const v = (k: (typeof IN_PLACE_FIELDS)[number]) => stored[k] ?? null;
  const sc: SourceConfig = {
    integration_id: v("integration_id") as string | null,
    repo_url: v("repo_url") as string | null,
    build_on_push: v("build_on_push") as boolean | null,
    custom_url: v("custom_url") as string | null,
    resource_spec: resourceSpec,
    listener_id: v("listener_id") as string | null,
    listener_config: v("listener_config") as SourceConfig["listener_config"],
    install_command: v("install_command") as string | null,
    build_command: v("build_command") as string | null,
  };
  return sc;
}

/** The response record: every key of the interface's table, in its order, plus deployment_type. */
export function toDeployment(row: DeploymentRow): Deployment {
  return {
    name: row.name,
    source: row.source,
    source_config: toSourceConfig(row.source_config, row.rev_resource_spec),
    source_revision_config: toSourceRevisionConfig(row.rev_config),
    secrets: (row.secret_names ?? []).map((name) => ({ name, value: MASK })),
    id: row.id,
    tenant_id: row.workspace_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    status: row.status,
    latest_revision_id: row.latest_revision_id,
    active_revision_id: row.active_revision_id,
    secret_references: row.rev_secret_references,
    image_version: row.image_version,
    deployment_type: row.deployment_type,
  };
}

/** A strong validator of the whole record: any change of any field changes it. */
export function etagOf(record: Deployment): string {
  return `"${createHash("sha256").update(JSON.stringify(record)).digest("base64url").slice(0, 32)}"`;
}

export async function findDeployment(
  exec: Reader,
  workspaceId: string,
  id: string,
): Promise<Deployment | undefined> {
  const row = await findDeploymentRow(exec, workspaceId, id);
  return row && toDeployment(row);
}

/** Stored source_revision_config: all five keys, null when unset. */
export function storedRevisionConfig(
  values: Record<(typeof REVISION_FIELDS)[number], string | null>,
  commitSha: string | null,
): Record<string, string | null> {
  return { ...values, repo_commit_sha: commitSha };
}
