import { type SQL, sql } from "drizzle-orm";
import type { Reader } from "../../db/client.ts";
import { isUuid } from "../../db/ids.ts";
import { invalid } from "../../http/errors.ts";
import { DEPLOYMENT_STATUSES } from "../../reconciler/states.ts";
import { MAX_BULK_DELETE } from "./delete-schema.ts";
import { toDeployment } from "./record.ts";
import type { DeploymentList, ListDeploymentsQuery } from "./schema.ts";
import { selectDeploymentRows } from "./store.ts";

/** A page of at most 100 is asked for; a filter list is bounded too, so one query stays small. */
const MAX_LIST_ITEMS = MAX_BULK_DELETE;

/** A comma-separated query value as its distinct items; every item must pass `valid`. */
export function commaList(
  raw: string,
  param: string,
  valid: (item: string) => boolean,
  what: string,
): string[] {
  const parts = raw.split(",").map((p) => p.trim());
  const bad = parts.find((p) => !valid(p));
  if (bad !== undefined) throw invalid(["query", param], `"${bad}" is not ${what}.`);
  const distinct = [...new Set(parts)];
  if (distinct.length > MAX_LIST_ITEMS) {
    throw invalid(["query", param], `At most ${MAX_LIST_ITEMS} values.`);
  }
  return distinct;
}

/** The ids of a bulk delete: the key repeated and comma-separated values alike, 1–100 distinct uuids. */
export function bulkDeleteIds(values: string[]): string[] {
  const ids = commaList(values.join(","), "deployment_ids", isUuid, "a deployment id (uuid)");
  return [...new Set(ids.map((id) => id.toLowerCase()))];
}
const inList = (values: string[]) =>
  sql.join(
    values.map((v) => sql`${v}`),
    sql`, `,
  );
/** LIKE metacharacters in a user's text match themselves. */
export const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** The WHERE clause of a list: the workspace, then each filter given (all must hold). */
export function listFilters(workspaceId: string, q: ListDeploymentsQuery): SQL {
  const where: SQL[] = [sql`d.workspace_id = ${workspaceId}`];
  if (q.name !== undefined) where.push(sql`d.name = ${q.name}`);
  if (q.name_contains !== undefined && q.name_contains !== "") {
    // Same expression as the pg_trgm index on lower(name).
    where.push(sql`lower(d.name) LIKE '%' || ${likeEscape(q.name_contains.toLowerCase())} || '%'`);
  }
  if (q.status !== undefined) {
    const statuses = commaList(
      q.status,
      "status",
      (s) => (DEPLOYMENT_STATUSES as readonly string[]).includes(s),
      `a deployment status (${DEPLOYMENT_STATUSES.join(", ")})`,
    );
    where.push(sql`d.status IN (${inList(statuses)})`);
  }
  if (q.remote_reconciled !== undefined) where.push(sql`d.remote_reconciled = ${q.remote_reconciled}`);
  if (q.image_version !== undefined) where.push(sql`d.image_version = ${q.image_version}`);
  if (q.deployment_type !== undefined) where.push(sql`d.deployment_type = ${q.deployment_type}`);
  if (q.deployment_ids !== undefined) {
    const ids = commaList(q.deployment_ids, "deployment_ids", isUuid, "a deployment id (uuid)");
    where.push(sql`d.id IN (${inList(ids.map((i) => i.toLowerCase()))})`);
  }
  if (q.tag_value_ids !== undefined) {
    const ids = commaList(q.tag_value_ids, "tag_value_ids", isUuid, "a tag value id (uuid)").map((i) =>
      i.toLowerCase(),
    );
    // For each tag key among the values, the deployment has one of the listed values of that key.
    // An id that names no tag value matches nothing.
    where.push(sql`(SELECT count(*) FROM tag_values WHERE id IN (${inList(ids)})) = ${ids.length}
      AND d.id IN (
        SELECT dt.deployment_id FROM deployment_tags dt JOIN tag_values tv ON tv.id = dt.tag_value_id
         WHERE dt.tag_value_id IN (${inList(ids)})
         GROUP BY dt.deployment_id
        HAVING count(DISTINCT tv.tag_key_id) =
               (SELECT count(DISTINCT tag_key_id) FROM tag_values WHERE id IN (${inList(ids)})))`);
  }
  return sql.join(where, sql` AND `);
}

export async function listDeployments(
  exec: Reader,
  workspaceId: string,
  q: ListDeploymentsQuery,
): Promise<DeploymentList> {
  const page = await selectDeploymentRows(exec, listFilters(workspaceId, q), q.limit, q.offset);
  const resources = page.map(toDeployment);
  return { resources, offset: q.offset + resources.length };
}
