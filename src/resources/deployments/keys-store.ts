import { type SQL, sql } from "drizzle-orm";
import { auditInTransaction, auditNotWritten } from "../../core/audit/scope.ts";
import type { DeploymentType, SecretReference, Source } from "../../core/deployments/model.ts";
import { deliveriesFor } from "../../core/events/deliveries-store.ts";
import { emit } from "../../core/events/emit.ts";
import { insertEventsFrom } from "../../core/events/store.ts";
import { assertDeploymentTransition, type DeploymentStatus } from "../../core/revisions/states.ts";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import { ANNOUNCED_SETTING, EVENTS_CHANNEL, RECORDS_CHANNEL, WORK_CHANNEL } from "../../db/channels.ts";
import {
  type Database,
  type Executor,
  inTransaction,
  type Reader,
  rows,
  type Transaction,
} from "../../db/client.ts";
import { envelopeColumn } from "../../db/envelopes.ts";
import { deployments } from "../../db/schema/deployments.ts";
import { likeEscape, sqlList, uuidList } from "../../db/sql.ts";
import { revisionMoveEvents, type StoredSecret, secretsOwner } from "../revisions/store.ts";
import { TAGGINGS_COUNTED, type TagValueGroup } from "../tags/store.ts";


/** The only module that writes SQL on `idempotency_keys`: the keys of POST /v2/deployments (idempotency.ts). */

/** Claims the key (new, or older than `window`); false when a live row holds it (idempotency.ts). */
export async function claimKey(
  tx: Executor,
  workspaceId: string,
  key: string,
  hash: string,
  window: string,
): Promise<boolean> {
  const claimed = await rows<{ key: string }>(
    tx,
    sql`INSERT INTO idempotency_keys (workspace_id, key, request_hash) VALUES (${workspaceId}, ${key}, ${hash})
        ON CONFLICT (workspace_id, key) DO UPDATE
          SET request_hash = EXCLUDED.request_hash, status_code = NULL, response = NULL, created_at = now()
          WHERE idempotency_keys.created_at < now() - ${window}::interval
        RETURNING key`,
  );
  return claimed.length > 0;
}

export async function storedKey(tx: Executor, workspaceId: string, key: string) {
  const [prior] = await rows<{ request_hash: string; status_code: number | null; response: unknown }>(
    tx,
    sql`SELECT request_hash, status_code, response FROM idempotency_keys
         WHERE workspace_id = ${workspaceId} AND key = ${key}`,
  );
  return prior;
}

export async function saveKeyResponse(
  tx: Executor,
  workspaceId: string,
  key: string,
  statusCode: number,
  json: string,
): Promise<void> {
  await tx.execute(
    sql`UPDATE idempotency_keys SET status_code = ${statusCode}, response = ${json}::jsonb
         WHERE workspace_id = ${workspaceId} AND key = ${key}`,
  );
}
