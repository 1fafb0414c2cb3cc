import { type SQL, sql } from "drizzle-orm";
import { GIVE_UP_AFTER } from "../../core/events/deliveries-store.ts";
import type { EnvelopeColumn } from "../../crypto/rotate.ts";
import { EVENTS_CHANNEL } from "../../db/channels.ts";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { envelopeColumn } from "../../db/envelopes.ts";
import { webhooks } from "../../db/schema/events.ts";
import { fromNow, isoSql } from "../../db/sql.ts";
import type { Delivery, ListDeliveriesQuery, Webhook } from "./schema.ts";

/** The only module that writes SQL on `webhooks`, `webhook_deliveries` and `webhook_attempts`. */

/** The `webhook-id` of an event's deliveries: the same on every attempt and every redeliver. */
const MESSAGE_ID = "'msg_' || replace(e.id::text, '-', '')";

const SELECT = sql.raw(`SELECT id, url, events, description, enabled, workspace_id AS tenant_id,
       ${isoSql("created_at")} AS created_at, ${isoSql("updated_at")} AS updated_at FROM webhooks`);

export interface NewWebhook {
  id: string;
  organizationId: string;
  workspaceId: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  secretEnc: string;
}

export async function insertWebhook(exec: Executor, w: NewWebhook): Promise<Webhook> {
  await exec.execute(
    sql`INSERT INTO webhooks (id, organization_id, workspace_id, url, events, description, enabled, secret_enc)
        VALUES (${w.id}, ${w.organizationId}, ${w.workspaceId}, ${w.url}, ${JSON.stringify(w.events)}::jsonb,
                ${w.description}, ${w.enabled}, ${w.secretEnc})`,
  );
  return (await findWebhook(exec, w.workspaceId, w.id)) as Webhook;
}

export function listWebhooks(exec: Reader, workspaceId: string, limit: number, offset: number) {
  return rows<Webhook>(
    exec,
    sql`${SELECT} WHERE workspace_id = ${workspaceId} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`,
  );
}

export async function findWebhook(
  exec: Reader,
  workspaceId: string,
  id: string,
): Promise<Webhook | undefined> {
  const [row] = await rows<Webhook>(exec, sql`${SELECT} WHERE workspace_id = ${workspaceId} AND id = ${id}`);
  return row;
}

export interface WebhookChanges {
  url?: string;
  events?: string[];
  description?: string;
  enabled?: boolean;
  secretEnc?: string;
}

/** Applies the changes; false when the webhook is not the workspace's. Disabling drops what is queued. */
export async function updateWebhook(
  exec: Executor,
  workspaceId: string,
  id: string,
  c: WebhookChanges,
): Promise<boolean> {
  const sets: SQL[] = [sql`updated_at = now()`];
  if (c.url !== undefined) sets.push(sql`url = ${c.url}`);
  if (c.events !== undefined) sets.push(sql`events = ${JSON.stringify(c.events)}::jsonb`);
  if (c.description !== undefined) sets.push(sql`description = ${c.description}`);
  if (c.enabled !== undefined) sets.push(sql`enabled = ${c.enabled}`);
  if (c.secretEnc !== undefined) sets.push(sql`secret_enc = ${c.secretEnc}`);
  const done = await rows<{ id: string }>(
    exec,
    sql`UPDATE webhooks SET ${sql.join(sets, sql`, `)} WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`,
  );
  if (done.length === 0) return false;
  if (c.enabled === false) {
    await exec.execute(
      sql`UPDATE webhook_deliveries SET status = 'failed', updated_at = now(), lease_owner = NULL, lease_expires_at = NULL
           WHERE webhook_id = ${id} AND status = 'pending'`,
    );
  }
  return true;
}

export async function deleteWebhook(exec: Executor, workspaceId: string, id: string): Promise<boolean> {
  const gone = await rows<{ id: string }>(
    exec,
    sql`DELETE FROM webhooks WHERE workspace_id = ${workspaceId} AND id = ${id} RETURNING id`,
  );
  return gone.length > 0;
}

// ── the delivery queue (born with their event: core/events/deliveries-store.ts) ────────────────────────────────────────────────────────────────────────

export interface ClaimedDelivery {
  id: string;
  webhook_id: string;
  url: string;
  secret_enc: string;
  event_id: string;
  body: string;
  attempts: number;
  /** No retry is scheduled past this. */
  give_up_at: string;
}

/**
 * Leases up to `limit` deliveries that are due. A webhook's deliveries go out in order: one waits
 * while an older one of the same webhook is still pending. SKIP LOCKED lets processes claim at once.
 */
export function claimDeliveries(
  exec: Executor,
  owner: string,
  leaseMs: number,
  limit: number,
): Promise<ClaimedDelivery[]> {
  if (limit <= 0) return Promise.resolve([]);
  return rows<ClaimedDelivery>(
    exec,
    sql`WITH claimed AS (
          UPDATE webhook_deliveries SET lease_owner = ${owner}, lease_expires_at = ${fromNow(leaseMs)}
           WHERE id IN (
             SELECT d.id FROM webhook_deliveries d
              WHERE d.status = 'pending' AND d.next_attempt_at <= now()
                AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o
                                 WHERE o.webhook_id = d.webhook_id AND o.status = 'pending' AND o.pk < d.pk)
              ORDER BY d.pk
              FOR UPDATE SKIP LOCKED
              LIMIT ${limit})
             AND (lease_expires_at IS NULL OR lease_expires_at < now())
          RETURNING id, webhook_id, event_pk, attempts, give_up_at)
        SELECT c.id, c.webhook_id, w.url, w.secret_enc, ${sql.raw(MESSAGE_ID)} AS event_id, e.body, c.attempts,
               ${sql.raw(isoSql("c.give_up_at"))} AS give_up_at
          FROM claimed c JOIN webhooks w ON w.id = c.webhook_id JOIN events e ON e.pk = c.event_pk`,
  );
}

export interface AttemptResult {
  at: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** delivered, or pending again after `retryInMs`, or failed for good. */
  outcome: { status: "delivered" } | { status: "pending"; retryInMs: number } | { status: "failed" };
}

/** Logs an attempt and moves the delivery on, if `owner` still holds it. */
export async function recordAttempt(
  exec: Executor,
  deliveryId: string,
  owner: string,
  r: AttemptResult,
): Promise<void> {
  // One statement: a reader never sees the delivery's new status and count without the attempt.
  await exec.execute(
    sql`WITH moved AS (
          UPDATE webhook_deliveries
             SET status = ${r.outcome.status}, attempts = attempts + 1, updated_at = now(),
                 next_attempt_at = ${r.outcome.status === "pending" ? fromNow(r.outcome.retryInMs) : sql`now()`},
                 lease_owner = NULL, lease_expires_at = NULL
           WHERE id = ${deliveryId} AND lease_owner = ${owner} RETURNING id)
        INSERT INTO webhook_attempts (delivery_id, at, status_code, error, duration_ms)
        SELECT id, ${r.at}::timestamptz, ${r.statusCode}::int, ${r.error}::text, ${r.durationMs}::int FROM moved`,
  );
}

const DELIVERY = sql.raw(`SELECT d.id, d.webhook_id, ${MESSAGE_ID} AS event_id,
       e.type AS event_type, d.status, d.attempts,
       CASE WHEN d.status = 'pending' THEN ${isoSql("d.next_attempt_at")} END AS next_attempt_at,
       ${isoSql("d.created_at")} AS created_at, ${isoSql("d.updated_at")} AS updated_at,
       coalesce((SELECT json_agg(json_build_object('at', ${isoSql("a.at")}, 'status_code', a.status_code,
                                                   'error', a.error, 'duration_ms', a.duration_ms) ORDER BY a.id)
                   FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]'::json) AS history
  FROM webhook_deliveries d JOIN events e ON e.pk = d.event_pk JOIN webhooks w ON w.id = d.webhook_id`);

/** A webhook's deliveries, newest first. */
export function listDeliveries(
  exec: Reader,
  workspaceId: string,
  webhookId: string,
  q: ListDeliveriesQuery,
): Promise<Delivery[]> {
  const byStatus = q.status === undefined ? sql.empty() : sql` AND d.status = ${q.status}`;
  return rows<Delivery>(
    exec,
    sql`${DELIVERY} WHERE w.workspace_id = ${workspaceId} AND d.webhook_id = ${webhookId}${byStatus}
        ORDER BY d.pk DESC LIMIT ${q.limit} OFFSET ${q.offset}`,
  );
}

export async function findDelivery(
  exec: Reader,
  workspaceId: string,
  webhookId: string,
  deliveryId: string,
): Promise<Delivery | undefined> {
  const [row] = await rows<Delivery>(
    exec,
    sql`${DELIVERY} WHERE w.workspace_id = ${workspaceId} AND d.webhook_id = ${webhookId} AND d.id = ${deliveryId}`,
  );
  return row;
}

/** Queues a delivery again at once (same event: same `webhook-id` and body), with a fresh 24 hours. */
export async function requeueDelivery(exec: Executor, webhookId: string, deliveryId: string): Promise<void> {
  await exec.execute(
    sql`UPDATE webhook_deliveries
           SET status = 'pending', next_attempt_at = now(), give_up_at = now() + ${GIVE_UP_AFTER}::interval,
               updated_at = now()
         WHERE id = ${deliveryId} AND webhook_id = ${webhookId}`,
  );
  // Wakes the dispatchers when the transaction commits.
  await exec.execute(sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${webhookId})`);
}

/** The encrypted columns of this store's tables, for key rotation. */
export const webhookEnvelopes = (exec: Executor): EnvelopeColumn[] => [
  envelopeColumn(exec, webhooks, webhooks.secretEnc),
];
