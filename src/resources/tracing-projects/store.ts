import { sql } from "drizzle-orm";
import { type Executor, rows } from "../../db/client.ts";
import { isoSql } from "../../db/sql.ts";
import type { ListTracingProjectsQuery, TracingProject } from "./schema.ts";

/** The only module that writes SQL on `tracing_projects`. */

const SELECT = sql.raw(
  `SELECT id, name, workspace_id AS tenant_id, deployment_id, ${isoSql("created_at")} AS created_at
     FROM tracing_projects`,
);

/**
 * A deployment's tracing project: created with it, or re-attached when a detached one of the same
 * name exists in the workspace. Runs inside the deployment's create transaction.
 */
export async function attachTracingProject(
  tx: Executor,
  workspaceId: string,
  name: string,
  deploymentId: string,
): Promise<void> {
  await tx.execute(
    sql`INSERT INTO tracing_projects (workspace_id, name, deployment_id) VALUES (${workspaceId}, ${name}, ${deploymentId})
        ON CONFLICT (workspace_id, name) DO UPDATE SET deployment_id = EXCLUDED.deployment_id
        WHERE tracing_projects.deployment_id IS NULL`,
  );
}

/** Deleting a deployment keeps its tracing project, detached. */
export async function detachTracingProjects(tx: Executor, deploymentId: string): Promise<void> {
  await tx.execute(
    sql`UPDATE tracing_projects SET deployment_id = NULL WHERE deployment_id = ${deploymentId}`,
  );
}

/**
 * `delete_tracing_project=true`: the deployment's tracing project goes instead of staying detached.
 * A second DELETE finds it detached under the same name (no other deployment can hold the name yet).
 */
export async function deleteTracingProjects(
  tx: Executor,
  workspaceId: string,
  deploymentId: string,
  name: string,
): Promise<void> {
  await tx.execute(
    sql`DELETE FROM tracing_projects
         WHERE workspace_id = ${workspaceId}
           AND (deployment_id = ${deploymentId} OR (name = ${name} AND deployment_id IS NULL))`,
  );
}

export async function listTracingProjects(
  exec: Executor,
  workspaceId: string,
  query: ListTracingProjectsQuery,
): Promise<TracingProject[]> {
  const byName = query.name === undefined ? sql.empty() : sql` AND name = ${query.name}`;
  return rows<TracingProject>(
    exec,
    sql`${SELECT} WHERE workspace_id = ${workspaceId}${byName}
        ORDER BY created_at DESC, id DESC LIMIT ${query.limit} OFFSET ${query.offset}`,
  );
}

export async function findTracingProject(
  exec: Executor,
  workspaceId: string,
  id: string,
): Promise<TracingProject | undefined> {
  const [row] = await rows<TracingProject>(
    exec,
    sql`${SELECT} WHERE workspace_id = ${workspaceId} AND id = ${id}`,
  );
  return row;
}
