import { inAuditedTransaction } from "../../core/audit/scope.ts";
import type { WorkspaceCaller } from "../../core/callers.ts";
import { listenerDeploymentRows } from "../../core/deployments/read-store.ts";
import { conflict, invalid, notFound } from "../../core/errors.ts";
import { AUTH_CHANNEL } from "../../db/channels.ts";
import type { Database, Executor, Reader } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import { listenerKeyIds } from "../api-keys/store.ts";
import type {
  CreateListenerBody,
  Listener,
  ListenerList,
  ListListenersQuery,
  PatchListenerBody,
} from "./schema.ts";
import {
  deleteListenerRow,
  findListenerRow,
  insertListener,
  type ListenerRow,
  listenerRows,
  lockListener,
  updateListener,
} from "./store.ts";

/** What the listener operations read of the config: the silence after which one is DISCONNECTED. */
export interface ListenerSettings {
  timeoutS: number;
}

export function toListener(row: ListenerRow): Listener {
  return {
    id: row.id,
    compute_type: row.compute_type,
    compute_id: row.compute_id,
    compute_config: { k8s_namespaces: row.compute_config.k8s_namespaces ?? null },
    version: row.version,
    status: row.connected ? "CONNECTED" : "DISCONNECTED",
    last_seen_at: row.last_seen_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const notFoundListener = (id: string) => notFound(`Listener ID ${id} not found.`);

export async function listListeners(
  exec: Reader,
  settings: ListenerSettings,
  workspaceId: string,
  q: ListListenersQuery,
): Promise<ListenerList> {
  const list = await listenerRows(exec, workspaceId, settings.timeoutS, q);
  return { resources: list.map(toListener), offset: q.offset + list.length };
}

export async function getListener(
  exec: Reader,
  settings: ListenerSettings,
  workspaceId: string,
  id: string,
): Promise<Listener> {
  const row = await findListenerRow(exec, workspaceId, id, settings.timeoutS);
  if (!row) throw notFoundListener(id);
  return toListener(row);
}

export async function createListener(
  exec: Executor,
  settings: ListenerSettings,
  caller: WorkspaceCaller,
  body: CreateListenerBody,
): Promise<Listener> {
  try {
    const row = await inAuditedTransaction(
      exec,
      (tx) =>
        insertListener(
          tx,
          {
            organizationId: caller.organizationId,
            workspaceId: caller.workspaceId,
            computeId: body.compute_id,
            computeConfig: { k8s_namespaces: body.compute_config.k8s_namespaces ?? null },
            version: body.version ?? null,
          },
          settings.timeoutS,
        ),
      (r) => r.id,
    );
    return toListener(row);
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw conflict(`A listener for compute_id "${body.compute_id}" already exists in this workspace.`);
    }
    throw err;
  }
}

/**
 * Only `version` and `compute_config` change; a namespace that a deployment targets cannot be
 * removed (422 naming the deployments), checked under the listener's row lock.
 */
export async function patchListener(
  db: Database,
  settings: ListenerSettings,
  workspaceId: string,
  id: string,
  body: PatchListenerBody,
): Promise<Listener> {
  return inAuditedTransaction(db.orm, async (tx) => {
    const row = await lockListener(tx, workspaceId, id, settings.timeoutS);
    if (!row) throw notFoundListener(id);
    let computeConfig: Record<string, unknown> = row.compute_config;
    if (body.compute_config !== undefined && body.compute_config !== null) {
      const namespaces = body.compute_config.k8s_namespaces ?? null;
      const kept = new Set(namespaces ?? []);
      const stranded = (await listenerDeploymentRows(tx, id)).filter(
        (d) => d.namespace !== null && !kept.has(d.namespace),
      );
      if (stranded.length > 0) {
        const names = stranded.map((d) => `${d.name} (${d.namespace})`).join(", ");
        throw invalid(
          ["body", "compute_config", "k8s_namespaces"],
          `Deployments still target namespaces this leaves out: ${names}.`,
        );
      }
      computeConfig = { k8s_namespaces: namespaces };
    }
    const version = body.version === undefined ? row.version : body.version;
    const updated = await updateListener(tx, id, { computeConfig, version }, settings.timeoutS);
    if (!updated) throw notFoundListener(id);
    return toListener(updated);
  });
}

/**
 * 409 while deployments use the listener; otherwise deleted with its API keys, which every
 * process then drops from its auth cache.
 */
export async function deleteListener(db: Database, workspaceId: string, id: string): Promise<string[]> {
  const keyIds = await inAuditedTransaction(db.orm, async (tx) => {
    const row = await lockListener(tx, workspaceId, id, 0);
    if (!row) throw notFoundListener(id);
    const using = await listenerDeploymentRows(tx, id);
    if (using.length > 0) {
      const names = using.map((d) => d.name).join(", ");
      throw conflict(`The listener still serves deployments (${names}): delete them first.`);
    }
    const keys = await listenerKeyIds(tx, id);
    await deleteListenerRow(tx, workspaceId, id);
    return keys;
  });
  for (const keyId of keyIds) await db.notify(AUTH_CHANNEL, keyId).catch(() => {});
  return keyIds;
}
