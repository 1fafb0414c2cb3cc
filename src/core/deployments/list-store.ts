import { type SQL, sql } from "drizzle-orm";
import { type Reader, rows } from "../../db/client.ts";
import { likeEscape, sqlList, uuidList } from "../../db/sql.ts";

/** One page of the deployments list, with its filters, as PostgreSQL assembles it. */

/** How far the tags store (`tagValueGroups`) counts a group's taggings: enough to tell a sparse value from a dense one. */
export const TAGGINGS_COUNTED = 3000;

/** The tag values of one key in a list filter, and how many taggings they have (counted up to TAGGINGS_COUNTED). */
export interface TagValueGroup {
  ids: string[];
  taggings: number;
}

/** The list filters, parsed (list.ts); every one given must hold. */
export interface DeploymentFilter {
  name?: string;
  /** Lower-case substring of the name. */
  nameContains?: string;
  statuses?: readonly string[];
  /** The latest revision's status is one of these. */
  latestRevisionStatuses?: readonly string[];
  remoteReconciled?: boolean;
  imageVersion?: string;
  deploymentType?: string;
  ids?: readonly string[];
  /** Tag value ids grouped by their key: a deployment has one of each group's values. */
  tagGroups?: readonly TagValueGroup[];
}

function filterSql(workspaceId: string, f: DeploymentFilter): SQL {
  const where: SQL[] = [sql`d.workspace_id = ${workspaceId}`];
  if (f.name !== undefined) where.push(sql`d.name = ${f.name}`);
  // Same expression as the pg_trgm index on lower(name).
  if (f.nameContains) where.push(sql`lower(d.name) LIKE '%' || ${likeEscape(f.nameContains)} || '%'`);
  if (f.statuses !== undefined) where.push(sql`d.status IN (${sqlList(f.statuses)})`);
  if (f.latestRevisionStatuses !== undefined)
    where.push(sql`d.latest_revision_status IN (${sqlList(f.latestRevisionStatuses)})`);
  if (f.remoteReconciled !== undefined) where.push(sql`d.remote_reconciled = ${f.remoteReconciled}`);
  if (f.imageVersion !== undefined) where.push(sql`d.image_version = ${f.imageVersion}`);
  if (f.deploymentType !== undefined) where.push(sql`d.deployment_type = ${f.deploymentType}`);
  if (f.ids !== undefined) where.push(sql`d.id IN (${uuidList(f.ids)})`);
  // One condition per tag key (never a GROUP BY over all taggings). A sparse value (fewer taggings
  // than counted) is where the query starts: its deployments by primary key, then sorted — walking
  // the list order and probing each row would visit ~20/frequency rows (420k for 1 row in 10k, 0.5 s
  // at 1M). The other keys, and dense values, are an EXISTS probe of deployment_tags per candidate.
  const groups = f.tagGroups ?? [];
  const sparsest = groups.reduce<TagValueGroup | undefined>(
    (best, g) => (g.taggings < TAGGINGS_COUNTED && (!best || g.taggings < best.taggings) ? g : best),
    undefined,
  );
  for (const group of groups) {
    const values = uuidList(group.ids);
    where.push(
      group === sparsest
        ? sql`d.id = ANY (ARRAY(SELECT dt.deployment_id FROM deployment_tags dt WHERE dt.tag_value_id IN (${values})))`
        : sql`EXISTS (SELECT 1 FROM deployment_tags dt
                       WHERE dt.deployment_id = d.id AND dt.tag_value_id IN (${values}))`,
    );
  }
  return sql.join(where, sql` AND `);
}

/**
 * One page of records as the response body, assembled by PostgreSQL from the stored records:
 * `{"resources":[…],"offset":N}`. The page's ids are chosen first — an index scan over the list
 * order (the list indexes lead with workspace and filter columns) — and only the page's rows are read.
 */
export async function deploymentPage(
  exec: Reader,
  workspaceId: string,
  filter: DeploymentFilter,
  limit: number,
  offset: number,
): Promise<string> {
  const [row] = await rows<{ body: string }>(exec, pageSql(workspaceId, filter, limit, offset));
  return row?.body ?? `{"resources":[],"offset":${offset}}`;
}

function pageSql(workspaceId: string, filter: DeploymentFilter, limit: number, offset: number): SQL {
  return sql`SELECT '{"resources":[' || coalesce(string_agg(d.record, ',' ORDER BY d.created_at DESC, d.id DESC), '')
               || '],"offset":' || (${offset}::int + count(*)) || '}' AS body
          FROM (SELECT d.id FROM deployments d WHERE ${filterSql(workspaceId, filter)}
                 ORDER BY d.created_at DESC, d.id DESC LIMIT ${limit} OFFSET ${offset}) page
          JOIN deployments d ON d.id = page.id`;
}

/** The plan of a list query as it ran, with its buffers (the scale bench prints it for every filter). */
export async function explainDeploymentPage(
  exec: Reader,
  workspaceId: string,
  filter: DeploymentFilter,
  limit: number,
  offset: number,
): Promise<string> {
  const plan = await rows<{ "QUERY PLAN": string }>(
    exec,
    sql`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${pageSql(workspaceId, filter, limit, offset)}`,
  );
  return plan.map((p) => p["QUERY PLAN"]).join("\n");
}
