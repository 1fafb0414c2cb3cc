import { createHash } from "node:crypto";
import { type SQL, sql } from "drizzle-orm";
import { type Reader, rows } from "../../db/client.ts";
import { type IN_PLACE_FIELDS, type REVISION_FIELDS, revisionValuesOf } from "./rules.ts";
import {
  type Deployment,
  type DeploymentType,
  MASK,
  type SecretReference,
  type Source,
  type SourceConfig,
  type SourceRevisionConfig,
} from "./schema.ts";

/** One deployment row joined with what its record shows of the latest revision. */
export interface DeploymentRow {
  id: string;
  name: string;
  source: Source;
  deployment_type: DeploymentType;
  source_config: Record<string, unknown>;
  image_version: string | null;
  status: Deployment["status"];
  latest_revision_id: string | null;
  active_revision_id: string | null;
  workspace_id: string;
  created_at: string;
  updated_at: string;
  rev_config: Record<string, unknown> | null;
  rev_resource_spec: Record<string, unknown> | null;
  rev_secret_references: SecretReference[] | null;
  secret_names: string[] | null;
}

/** Timestamps as ISO 8601 text in SQL, so both drivers hand back the same strings. */
export const isoSql = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The columns a Deployment record needs: row `d`, latest revision `r`, secret names. */
const RECORD_COLUMNS = `d.id, d.name, d.source, d.deployment_type, d.source_config,
       d.image_version, d.status, d.latest_revision_id, d.active_revision_id, d.workspace_id,
       ${isoSql("d.created_at")} AS created_at, ${isoSql("d.updated_at")} AS updated_at,
       r.source_revision_config AS rev_config, r.resource_spec AS rev_resource_spec,
       r.secret_references AS rev_secret_references,
       (SELECT json_agg(s.name ORDER BY s.position) FROM revision_secrets s
         WHERE s.revision_id = d.latest_revision_id) AS secret_names`;

/** Everything a Deployment record needs, in one statement: row, latest revision, secret names. */
export const DEPLOYMENT_SELECT = sql.raw(`SELECT ${RECORD_COLUMNS}
  FROM deployments d LEFT JOIN revisions r ON r.id = d.latest_revision_id`);

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

export async function findDeploymentRow(
  exec: Reader,
  workspaceId: string,
  id: string,
): Promise<DeploymentRow | undefined> {
  const [row] = await rows<DeploymentRow>(
    exec,
    sql`${DEPLOYMENT_SELECT} WHERE d.id = ${id} AND d.workspace_id = ${workspaceId}`,
  );
  return row;
}

export async function findDeployment(
  exec: Reader,
  workspaceId: string,
  id: string,
): Promise<Deployment | undefined> {
  const row = await findDeploymentRow(exec, workspaceId, id);
  return row && toDeployment(row);
}

/**
 * One page of records. The page's ids are chosen first — an index-only scan over the list order
 * (the list indexes lead with workspace and filter columns), so skipped rows cost an index entry,
 * not a heap fetch and a join — and only the page's rows are read and joined with their revisions.
 */
export async function selectDeployments(exec: Reader, where: SQL, limit: number, offset: number) {
  const list = await rows<DeploymentRow>(
    exec,
    sql`SELECT ${sql.raw(RECORD_COLUMNS)}
          FROM (SELECT d.id FROM deployments d WHERE ${where}
                 ORDER BY d.created_at DESC, d.id DESC LIMIT ${limit} OFFSET ${offset}) page
          JOIN deployments d ON d.id = page.id
          LEFT JOIN revisions r ON r.id = d.latest_revision_id
         ORDER BY d.created_at DESC, d.id DESC`,
  );
  return list.map(toDeployment);
}

/** Stored source_revision_config: all five keys, null when unset. */
export function storedRevisionConfig(
  values: Record<(typeof REVISION_FIELDS)[number], string | null>,
  commitSha: string | null,
): Record<string, string | null> {
  return { ...values, repo_commit_sha: commitSha };
}
