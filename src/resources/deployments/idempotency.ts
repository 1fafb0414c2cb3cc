import { createHash } from "node:crypto";
import { invalid } from "../../core/errors.ts";
import type { Executor } from "../../db/client.ts";
import { claimKey, saveKeyResponse, storedKey } from "./keys-store.ts";

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
  if (await claimKey(tx, workspaceId, key, hash, WINDOW)) return undefined;
  const prior = await storedKey(tx, workspaceId, key);
  if (!prior || prior.request_hash !== hash || prior.status_code === null) {
    throw invalid(LOC, "This Idempotency-Key was already used with another request body.");
  }
  return { statusCode: prior.status_code, body: prior.response };
}

/** Keeps the response to replay; `json` is its body as JSON text (the stored record). */
export async function saveIdempotentResponse(
  tx: Executor,
  workspaceId: string,
  key: string,
  response: { statusCode: number; json: string },
): Promise<void> {
  await saveKeyResponse(tx, workspaceId, key, response.statusCode, response.json);
}
