import { createHash } from "node:crypto";
import { sql } from "drizzle-orm";
import { type Executor, rows } from "../../db/client.ts";
import { invalid } from "../../http/errors.ts";

/** Replays of POST /v2/deployments: the same key and body within this window get the first response. */
const WINDOW = "24 hours";
const KEY = /^[\x21-\x7e]{1,255}$/;
const LOC = ["header", "idempotency-key"];

export interface StoredResponse {
  statusCode: number;
  body: unknown;
}

export function checkIdempotencyKey(raw: string | string[] | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== "string" || !KEY.test(raw)) {
    throw invalid(LOC, "Must be 1 to 255 printable ASCII characters without spaces.");
  }
  return raw;
}

/** Key order does not matter: `{a,b}` and `{b,a}` are the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export const requestHash = (body: unknown) => createHash("sha256").update(canonical(body)).digest("hex");

/**
 * Claims the key inside the create transaction. A concurrent request with the same key waits on
 * the row until this transaction ends, then replays what it stored; a rolled-back create frees
 * the key. Returns the stored response to replay, or undefined when this request goes ahead.
 */
export async function claimIdempotencyKey(
  tx: Executor,
  workspaceId: string,
  key: string,
  hash: string,
): Promise<StoredResponse | undefined> {
  const claimed = await rows<{ key: string }>(
    tx,
    sql`INSERT INTO idempotency_keys (workspace_id, key, request_hash) VALUES (${workspaceId}, ${key}, ${hash})
        ON CONFLICT (workspace_id, key) DO UPDATE
          SET request_hash = EXCLUDED.request_hash, status_code = NULL, response = NULL, created_at = now()
          WHERE idempotency_keys.created_at < now() - ${WINDOW}::interval
        RETURNING key`,
  );
  if (claimed.length > 0) return undefined;
  const [prior] = await rows<{ request_hash: string; status_code: number | null; response: unknown }>(
    tx,
    sql`SELECT request_hash, status_code, response FROM idempotency_keys
         WHERE workspace_id = ${workspaceId} AND key = ${key}`,
  );
  if (!prior || prior.request_hash !== hash || prior.status_code === null) {
    throw invalid(LOC, "This Idempotency-Key was already used with another request body.");
  }
  return { statusCode: prior.status_code, body: prior.response };
}

export async function saveIdempotentResponse(
  tx: Executor,
  workspaceId: string,
  key: string,
  response: StoredResponse,
): Promise<void> {
  await tx.execute(
    sql`UPDATE idempotency_keys SET status_code = ${response.statusCode}, response = ${JSON.stringify(response.body)}::jsonb
         WHERE workspace_id = ${workspaceId} AND key = ${key}`,
  );
}
