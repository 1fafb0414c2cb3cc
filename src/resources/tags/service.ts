import { sql } from "drizzle-orm";
import { type Executor, rows } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import { isoSql } from "../../db/sql.ts";
import { conflict, invalid, notFound } from "../../http/errors.ts";
import type { DeploymentTag, TagKey, TagValue } from "./schema.ts";

/** Tag keys belong to a workspace; values to a key; taggings join a deployment and a value of its workspace. */
const KEY_COLS = sql.raw(`k.id, k.key, ${isoSql("k.created_at")} AS created_at`);
const VALUE_COLS = sql.raw(`v.id, v.tag_key_id, v.value, ${isoSql("v.created_at")} AS created_at`);
const TAGGING_SELECT = sql.raw(`SELECT t.deployment_id, t.tag_value_id, v.tag_key_id, k.key, v.value,
       ${isoSql("t.created_at")} AS created_at
  FROM deployment_tags t JOIN tag_values v ON v.id = t.tag_value_id JOIN tag_keys k ON k.id = v.tag_key_id
  JOIN deployments d ON d.id = t.deployment_id`);

export async function listTagKeys(exec: Executor, workspaceId: string): Promise<TagKey[]> {
  return rows<TagKey>(
    exec,
    sql`SELECT ${KEY_COLS} FROM tag_keys k WHERE k.workspace_id = ${workspaceId} ORDER BY k.key, k.id`,
  );
}

export async function createTagKey(exec: Executor, workspaceId: string, key: string): Promise<TagKey> {
  try {
    const [row] = await rows<TagKey>(
      exec,
      sql`INSERT INTO tag_keys AS k (workspace_id, key) VALUES (${workspaceId}, ${key}) RETURNING ${KEY_COLS}`,
    );
    return row as TagKey;
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`A tag key "${key}" already exists in this workspace.`);
    throw err;
  }
}

/** Deleting a key deletes its values and every tagging with them. */
export async function deleteTagKey(exec: Executor, workspaceId: string, keyId: string): Promise<TagKey> {
  const [row] = await rows<TagKey>(
    exec,
    sql`DELETE FROM tag_keys AS k WHERE k.id = ${keyId} AND k.workspace_id = ${workspaceId} RETURNING ${KEY_COLS}`,
  );
  if (!row) throw notFound("Tag key not found.");
  return row;
}

async function assertKey(exec: Executor, workspaceId: string, keyId: string): Promise<void> {
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM tag_keys WHERE id = ${keyId} AND workspace_id = ${workspaceId}`,
  );
  if (found.length === 0) throw notFound("Tag key not found.");
}

export async function listTagValues(exec: Executor, workspaceId: string, keyId: string): Promise<TagValue[]> {
  const list = await rows<TagValue>(
    exec,
    sql`SELECT ${VALUE_COLS} FROM tag_values v JOIN tag_keys k ON k.id = v.tag_key_id
         WHERE k.id = ${keyId} AND k.workspace_id = ${workspaceId} ORDER BY v.value, v.id`,
  );
  if (list.length === 0) await assertKey(exec, workspaceId, keyId);
  return list;
}

export async function createTagValue(
  exec: Executor,
  workspaceId: string,
  keyId: string,
  value: string,
): Promise<TagValue> {
  await assertKey(exec, workspaceId, keyId);
  try {
    const [row] = await rows<TagValue>(
      exec,
      sql`INSERT INTO tag_values AS v (tag_key_id, value) VALUES (${keyId}, ${value}) RETURNING ${VALUE_COLS}`,
    );
    return row as TagValue;
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`The tag key already has a value "${value}".`);
    throw err;
  }
}

export async function deleteTagValue(
  exec: Executor,
  workspaceId: string,
  keyId: string,
  valueId: string,
): Promise<TagValue> {
  const [row] = await rows<TagValue>(
    exec,
    sql`DELETE FROM tag_values AS v USING tag_keys k
         WHERE v.id = ${valueId} AND v.tag_key_id = ${keyId} AND k.id = v.tag_key_id AND k.workspace_id = ${workspaceId}
         RETURNING ${VALUE_COLS}`,
  );
  if (!row) throw notFound("Tag value not found.");
  return row;
}

async function assertDeployment(exec: Executor, workspaceId: string, deploymentId: string): Promise<void> {
  const found = await rows<{ id: string }>(
    exec,
    sql`SELECT id FROM deployments WHERE id = ${deploymentId} AND workspace_id = ${workspaceId}`,
  );
  if (found.length === 0) throw notFound("Deployment not found.");
}

export async function listDeploymentTags(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
): Promise<DeploymentTag[]> {
  const list = await rows<DeploymentTag>(
    exec,
    sql`${TAGGING_SELECT} WHERE d.workspace_id = ${workspaceId} AND t.deployment_id = ${deploymentId}
        ORDER BY k.key, v.value`,
  );
  if (list.length === 0) await assertDeployment(exec, workspaceId, deploymentId);
  return list;
}

async function findTagging(exec: Executor, workspaceId: string, deploymentId: string, valueId: string) {
  const [row] = await rows<DeploymentTag>(
    exec,
    sql`${TAGGING_SELECT} WHERE d.workspace_id = ${workspaceId} AND t.deployment_id = ${deploymentId}
          AND t.tag_value_id = ${valueId}`,
  );
  return row;
}

export async function tagDeployment(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
  valueId: string,
): Promise<DeploymentTag> {
  await assertDeployment(exec, workspaceId, deploymentId);
  // Only a value of this workspace's keys: another workspace's ids are as unknown as made-up ones.
  const inserted = await rows<{ tag_value_id: string }>(
    exec,
    sql`INSERT INTO deployment_tags (deployment_id, tag_value_id)
        SELECT ${deploymentId}, v.id FROM tag_values v JOIN tag_keys k ON k.id = v.tag_key_id
         WHERE v.id = ${valueId} AND k.workspace_id = ${workspaceId}
        ON CONFLICT DO NOTHING RETURNING tag_value_id`,
  );
  const tagging = await findTagging(exec, workspaceId, deploymentId, valueId);
  if (!tagging) throw invalid(["body", "tag_value_id"], "Not a tag value of this workspace.");
  if (inserted.length === 0) throw conflict("The deployment already has this tag value.");
  return tagging;
}

export async function untagDeployment(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
  valueId: string,
): Promise<DeploymentTag> {
  const tagging = await findTagging(exec, workspaceId, deploymentId, valueId);
  if (!tagging) throw notFound("The deployment does not have this tag value.");
  await exec.execute(
    sql`DELETE FROM deployment_tags WHERE deployment_id = ${deploymentId} AND tag_value_id = ${valueId}`,
  );
  return tagging;
}
