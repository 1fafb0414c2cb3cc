import { inAuditedTransaction } from "../../core/audit/scope.ts";
import { deploymentExists } from "../../core/deployments/read-store.ts";
import { conflict, invalid, notFound } from "../../core/errors.ts";
import type { Executor } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import type { DeploymentTag, TagKey, TagValue } from "./schema.ts";
import {
  deleteTagging,
  deleteTagKeyRow,
  deleteTagValueRow,
  findTagging,
  insertTagging,
  insertTagKey,
  insertTagValue,
  taggingRows,
  tagKeyExists,
  tagKeyRows,
  tagValueRows,
} from "./store.ts";

export function listTagKeys(exec: Executor, workspaceId: string): Promise<TagKey[]> {
  return tagKeyRows(exec, workspaceId);
}

export async function createTagKey(exec: Executor, workspaceId: string, key: string): Promise<TagKey> {
  try {
    return await inAuditedTransaction(
      exec,
      (tx) => insertTagKey(tx, workspaceId, key),
      (k) => k.id,
    );
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`A tag key "${key}" already exists in this workspace.`);
    throw err;
  }
}

/** Deleting a key deletes its values and every tagging with them. */
export async function deleteTagKey(exec: Executor, workspaceId: string, keyId: string): Promise<TagKey> {
  const row = await inAuditedTransaction(exec, (tx) => deleteTagKeyRow(tx, workspaceId, keyId));
  if (!row) throw notFound("Tag key not found.");
  return row;
}

async function assertKey(exec: Executor, workspaceId: string, keyId: string): Promise<void> {
  if (!(await tagKeyExists(exec, workspaceId, keyId))) throw notFound("Tag key not found.");
}

export async function listTagValues(exec: Executor, workspaceId: string, keyId: string): Promise<TagValue[]> {
  const list = await tagValueRows(exec, workspaceId, keyId);
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
    return await inAuditedTransaction(
      exec,
      (tx) => insertTagValue(tx, keyId, value),
      (v) => v.id,
    );
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
  const row = await inAuditedTransaction(exec, (tx) => deleteTagValueRow(tx, workspaceId, keyId, valueId));
  if (!row) throw notFound("Tag value not found.");
  return row;
}

async function assertDeployment(exec: Executor, workspaceId: string, deploymentId: string): Promise<void> {
  if (!(await deploymentExists(exec, workspaceId, deploymentId))) throw notFound("Deployment not found.");
}

export async function listDeploymentTags(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
): Promise<DeploymentTag[]> {
  const list = await taggingRows(exec, workspaceId, deploymentId);
  if (list.length === 0) await assertDeployment(exec, workspaceId, deploymentId);
  return list;
}

export async function tagDeployment(
  exec: Executor,
  workspaceId: string,
  deploymentId: string,
  valueId: string,
): Promise<DeploymentTag> {
  await assertDeployment(exec, workspaceId, deploymentId);
  const inserted = await insertTagging(exec, workspaceId, deploymentId, valueId);
  const tagging = await findTagging(exec, workspaceId, deploymentId, valueId);
  if (!tagging) throw invalid(["body", "tag_value_id"], "Not a tag value of this workspace.");
  if (!inserted) throw conflict("The deployment already has this tag value.");
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
  await deleteTagging(exec, deploymentId, valueId);
  return tagging;
}
