import { sql } from "drizzle-orm";
import { type Executor, rows } from "../../db/client.ts";

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
