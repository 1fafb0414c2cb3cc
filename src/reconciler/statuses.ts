import { sql } from "drizzle-orm";
import type { RevisionStatus } from "./states.ts";

/** Statuses a worker can pick up: in progress, or UNKNOWN (a fault or a dead worker) to retry. */
export const CLAIMABLE: readonly RevisionStatus[] = [
  "QUEUED",
  "AWAITING_BUILD",
  "BUILDING",
  "AWAITING_DEPLOY",
  "DEPLOYING",
  "UNKNOWN",
];

/** Statuses in which a worker was mid-way: a new claim restarts them from prepare. */
export const MID_WAY: ReadonlySet<RevisionStatus> = new Set([
  "AWAITING_BUILD",
  "BUILDING",
  "AWAITING_DEPLOY",
  "DEPLOYING",
]);

/** A SQL list literal of statuses, for `status IN (…)`. */
export function statusList(statuses: readonly string[]) {
  return sql.join(
    statuses.map((s) => sql`${s}`),
    sql`, `,
  );
}

export const leaseInterval = (ms: number) => sql`(now() + ${Math.round(ms)}::int * interval '1 millisecond')`;
