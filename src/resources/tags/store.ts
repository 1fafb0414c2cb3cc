import { sql } from "drizzle-orm";
import { TAGGINGS_COUNTED, type TagValueGroup } from "../../core/deployments/list-store.ts";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { isoSql, uuidList } from "../../db/sql.ts";
import type { DeploymentTag, TagKey, TagValue } from "./schema.ts";

/**
 * The only module that writes SQL on `tag_keys`, `tag_values` and `deployment_tags`. Tag keys
 * belong to a workspace; values to a key; taggings join a deployment and a value of its workspace.
 * A taken key or value throws the driver's unique violation (service.ts turns it into a 409).
 */
const KEY_COLS = sql.raw(`k.id, k.key, ${isoSql("k.created_at")} AS created_at`);
const VALUE_COLS = sql.raw(`v.id, v.tag_key_id, v.value, ${isoSql("v.created_at")} AS created_at`);
const TAGGING_SELECT = sql.raw(`SELECT t.deployment_id, t.tag_value_id, v.tag_key_id, k.key, v.value,
       ${isoSql("t.created_at")} AS created_at
  FROM deployment_tags t JOIN tag_values v ON v.id = t.tag_value_id JOIN tag_keys k ON k.id = v.tag_key_id
  JOIN deployments d ON d.id = t.deployment_id`);

/**
 * The given tag value ids that exist, grouped by their key (for the list filter), each group with
 * its taggings counted up to a bound (an index-only scan of at most TAGGINGS_COUNTED entries), so
 * the list query can start from a sparse value's deployments instead of walking the list order.
 */
export async function tagValueGroups(exec: Reader, ids: readonly string[]): Promise<TagValueGroup[]> {
  if (ids.length === 0) return [];
  return rows<TagValueGroup>(
    exec,
    sql`SELECT g.ids::text[] AS ids, c.taggings
          FROM (SELECT tag_key_id, array_agg(id ORDER BY id) AS ids FROM tag_values
                 WHERE id IN (${uuidList(ids)}) GROUP BY tag_key_id) g,
               LATERAL (SELECT count(*)::int AS taggings
                          FROM (SELECT 1 FROM deployment_tags dt WHERE dt.tag_value_id = ANY (g.ids)
                                 LIMIT ${TAGGINGS_COUNTED}) t) c
         ORDER BY g.tag_key_id`,
  );
}

export function tagKeyRows(exec: Executor, workspaceId: string): Promise<TagKey[]> {
  return rows<TagKey>(
    exec,
    sql`SELECT ${KEY_COLS} FROM tag_keys k WHERE k.workspace_id = ${workspaceId} ORDER BY k.key, k.id`,
  );
}

export async function insertTagKey(exec: Executor, workspaceId: string, key: string): Promise<TagKey> {
  const [row] = await rows<TagKey>(
    exec,
    sql`INSERT INTO tag_keys AS k (workspace_id, key) VALUES (${workspaceId}, ${key}) RETURNING ${KEY_COLS}`,
  );
  return row as TagKey;
}

/** Deleting a key deletes its values and every tagging with them (the foreign keys cascade). */
export async function deleteTagKeyRow(exec: Executor, workspaceId: string, keyId: string) {
  const [row] = await rows<TagKey>(
    exec,
    sql`DELETE FROM tag_keys AS k WHERE k.id = ${keyId} AND k.workspace_id = ${workspaceId} RETURNING ${KEY_COLS}`,
  );
  return row;
}

export async function tagKeyExists(exec: Executor, workspaceId: string, keyId: string): Promise<boolean> {
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM tag_keys WHERE id = ${keyId} AND workspace_id = ${workspaceId}`,
  );
  return found.length > 0;
}

export function tagValueRows(exec: Executor, workspaceId: string, keyId: string): Promise<TagValue[]> {
  return rows<TagValue>(
    exec,
    sql`SELECT ${VALUE_COLS} FROM tag_values v JOIN tag_keys k ON k.id = v.tag_key_id
         WHERE k.id = ${keyId} AND k.workspace_id = ${workspaceId} ORDER BY v.value, v.id`,
  );
}

export async function insertTagValue(exec: Executor, keyId: string, value: string): Promise<TagValue> {
  const [row] = await rows<TagValue>(
    exec,
    sql`INSERT INTO tag_values AS v (tag_key_id, value) VALUES (${keyId}, ${value}) RETURNING ${VALUE_COLS}`,
  );
  return row as TagValue;
}

export async function deleteTagValueRow(exec: Executor, workspaceId: string, keyId: string, valueId: string) {
  const [row] = await rows<TagValue>(
    exec,
    sql`DELETE FROM tag_values AS v USING tag_keys k
         WHERE v.id = ${valueId} AND v.tag_key_id = ${keyId} AND k.id = v.tag_key_id AND k.workspace_id = ${workspaceId}
         RETURNING ${VALUE_COLS}`,
  );
  return row;
}

export function taggingRows(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
): Promise<DeploymentTag[]> {
  return rows<DeploymentTag>(
    exec,
    sql`${TAGGING_SELECT} WHERE d.workspace_id = ${workspaceId} AND t.deployment_id = ${deploymentId}
        ORDER BY k.key, v.value`,
  );
}

export async function findTagging(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
  valueId: string,
) {
  const [row] = await rows<DeploymentTag>(
    exec,
    sql`${TAGGING_SELECT} WHERE d.workspace_id = ${workspaceId} AND t.deployment_id = ${deploymentId}
          AND t.tag_value_id = ${valueId}`,
  );
  return row;
}

/**
 * Tags the deployment with a value of this workspace's keys (another workspace's ids are as
 * unknown as made-up ones); false when nothing was inserted (already tagged, or no such value).
 */
export async function insertTagging(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
  valueId: string,
): Promise<boolean> {
  const inserted = await rows<{ tag_value_id: string }>(
    exec,
    sql`INSERT INTO deployment_tags (deployment_id, tag_value_id)
        SELECT ${deploymentId}, v.id FROM tag_values v JOIN tag_keys k ON k.id = v.tag_key_id
         WHERE v.id = ${valueId} AND k.workspace_id = ${workspaceId}
        ON CONFLICT DO NOTHING RETURNING tag_value_id`,
  );
  return inserted.length > 0;
}

export async function deleteTagging(exec: Executor, deploymentId: string, valueId: string): Promise<void> {
  await exec.execute(
    sql`DELETE FROM deployment_tags WHERE deployment_id = ${deploymentId} AND tag_value_id = ${valueId}`,
  );
}
