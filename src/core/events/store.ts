import { type SQL, sql } from "drizzle-orm";
import { EVENTS_CHANNEL, EVENTS_SEQUENCE_LOCK } from "../../db/channels.ts";
import { type Database, type Executor, type Reader, rows } from "../../db/client.ts";

/** The only module that writes SQL on `events`. */

export interface NewEvent {
  id: string;
  organizationId: string;
  workspaceId: string;
  type: string;
  /** ISO 8601, when it happened. */
  timestamp: string;
  /** The event's `data` as JSON text. */
  data: string;
}

/**
 * An event's body, the exact JSON receivers and the stream get: `{type, timestamp, data}` (the
 * Standard Webhooks shape), `data` as given (JSON text).
 */
function eventBody(type: SQL, timestamp: SQL, data: SQL): SQL {
  return sql`json_build_object('type', ${type}, 'timestamp', ${timestamp}, 'data', ${data})::text`;
}

/** Records an event in the caller's transaction; the NOTIFY goes out only when it commits. */
export async function insertEvent(tx: Executor, e: NewEvent): Promise<number> {
  const [row] = await rows<{ pk: string }>(
    tx,
    sql`INSERT INTO events (id, organization_id, workspace_id, type, body)
        VALUES (${e.id}, ${e.organizationId}, ${e.workspaceId}, ${e.type},
                ${eventBody(sql`${e.type}::text`, sql`${e.timestamp}::text`, sql`${e.data}::json`)})
        RETURNING pk`,
  );
  await tx.execute(sql`SELECT ${notifyEvents(sql`${e.workspaceId}::text`)}`);
  return Number(row?.pk);
}

/**
 * For a data-modifying CTE: records the events `source` selects — columns organization_id,
 * workspace_id, type, data (json), ord (their order) — returning pk, workspace_id and type of each.
 */
export function insertEventsFrom(source: SQL, timestamp: string): SQL {
  return sql`INSERT INTO events (id, organization_id, workspace_id, type, body)
             SELECT gen_random_uuid(), e.organization_id, e.workspace_id, e.type,
                    ${eventBody(sql`e.type`, sql`${timestamp}::text`, sql`e.data`)}
               FROM (${source}) e ORDER BY e.ord
             RETURNING pk, workspace_id, type`;
}

/** The call that wakes the stream's sequencer and followers of a workspace (delivered at commit). */
export function notifyEvents(workspaceId: SQL): SQL {
  return sql`pg_notify(${EVENTS_CHANNEL}::text, ${workspaceId})`;
}

/**
 * Gives committed events their stream ids (`seq`), in one batch under a lock: ids are then handed
 * out in commit order, so no event ever appears below an id a follower has already read (an id
 * from a sequence taken inside the writing transaction could commit after a higher one).
 */
export async function sequenceEvents(db: Database): Promise<void> {
  await db.orm.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${EVENTS_SEQUENCE_LOCK})`);
    await tx.execute(
      sql`UPDATE events e SET seq = top.n + pending.rn
            FROM (SELECT pk, row_number() OVER (ORDER BY pk) AS rn FROM events WHERE seq IS NULL) pending,
                 (SELECT coalesce(max(seq), 0) AS n FROM events) top
           WHERE e.pk = pending.pk`,
    );
  });
}

export interface StreamEvent {
  seq: string;
  type: string;
  body: string;
}

/** A workspace's sequenced events after `after`, oldest first (by the bigint column, not its text alias). */
export function eventsAfter(
  exec: Reader,
  workspaceId: string,
  after: string,
  types: readonly string[] | undefined,
  limit: number,
): Promise<StreamEvent[]> {
  const byType =
    types === undefined
      ? sql.empty()
      : sql` AND type IN (${sql.join(
          types.map((t) => sql`${t}`),
          sql`, `,
        )})`;
  return rows<StreamEvent>(
    exec,
    sql`SELECT seq::text AS seq, type, body FROM events
         WHERE workspace_id = ${workspaceId} AND seq > ${after}::bigint${byType}
         ORDER BY events.seq LIMIT ${limit}`,
  );
}

/** The newest stream id of a workspace ("0" when it has none): where a fresh follower starts. */
export async function lastEventSeq(exec: Reader, workspaceId: string): Promise<string> {
  const [row] = await rows<{ seq: string | null }>(
    exec,
    sql`SELECT max(seq)::text AS seq FROM events WHERE workspace_id = ${workspaceId}`,
  );
  return row?.seq ?? "0";
}

/**
 * Drops events (and with them their deliveries) older than `days` days. The newest sequenced one
 * stays: the sequencer continues from it, so stream ids are never handed out twice.
 */
export async function pruneEvents(exec: Executor, days: number): Promise<number> {
  const gone = await rows<{ pk: string }>(
    exec,
    sql`DELETE FROM events WHERE created_at < now() - ${days}::int * interval '1 day'
          AND seq < (SELECT max(seq) FROM events) RETURNING pk`,
  );
  return gone.length;
}
