import { type DeploymentFilter, deploymentPage } from "../../core/deployments/list-store.ts";
import { invalid } from "../../core/errors.ts";
import { DEPLOYMENT_STATUSES, REVISION_STATUSES } from "../../core/revisions/states.ts";
import type { Reader } from "../../db/client.ts";
import { isUuid } from "../../db/ids.ts";
import { tagValueGroups } from "../tags/store.ts";
import { MAX_BULK_DELETE } from "./delete-schema.ts";
import type { ListDeploymentsQuery } from "./schema.ts";

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
/**
 * The filters of a list query, checked: 422 for a bad status or id. Tag value ids are grouped by
 * their key (values of one key are alternatives; keys all must hold); an id that names no tag
 * value matches nothing.
 */
export async function listFilter(exec: Reader, q: ListDeploymentsQuery): Promise<DeploymentFilter | null> {
  const f: DeploymentFilter = {};
  if (q.name !== undefined) f.name = q.name;
  if (q.name_contains !== undefined && q.name_contains !== "") f.nameContains = q.name_contains.toLowerCase();
  if (q.status !== undefined) {
    f.statuses = commaList(
      q.status,
      "status",
      (s) => (DEPLOYMENT_STATUSES as readonly string[]).includes(s),
      `a deployment status (${DEPLOYMENT_STATUSES.join(", ")})`,
    );
  }
  if (q.latest_revision_status !== undefined) {
    f.latestRevisionStatuses = commaList(
      q.latest_revision_status,
      "latest_revision_status",
      (s) => (REVISION_STATUSES as readonly string[]).includes(s),
      `a revision status (${REVISION_STATUSES.join(", ")})`,
    );
  }
  if (q.remote_reconciled !== undefined) f.remoteReconciled = q.remote_reconciled;
  if (q.image_version !== undefined) f.imageVersion = q.image_version;
  if (q.deployment_type !== undefined) f.deploymentType = q.deployment_type;
  if (q.deployment_ids !== undefined) {
    const ids = commaList(q.deployment_ids, "deployment_ids", isUuid, "a deployment id (uuid)");
    f.ids = ids.map((i) => i.toLowerCase());
  }
  if (q.tag_value_ids !== undefined) {
    const ids = commaList(q.tag_value_ids, "tag_value_ids", isUuid, "a tag value id (uuid)").map((i) =>
      i.toLowerCase(),
    );
    const groups = await tagValueGroups(exec, ids);
    if (groups.flatMap((g) => g.ids).length < new Set(ids).size) return null;
    f.tagGroups = groups;
  }
  return f;
}

/** GET /v2/deployments: the response body, as PostgreSQL assembled it. */
export async function listDeployments(
  exec: Reader,
  workspaceId: string,
  q: ListDeploymentsQuery,
): Promise<string> {
  const filter = await listFilter(exec, q);
  if (filter === null) return JSON.stringify({ resources: [], offset: q.offset });
  return deploymentPage(exec, workspaceId, filter, q.limit, q.offset);
}
