// What every client does with a revision: wait for it to end, follow its logs. Browser-safe.
import { type LogLine, type Revision, type Slipway, unwrap } from "./client.ts";
import { openStream, type SseEvent } from "./sse.ts";
import { FAILED_STATUSES } from "./statuses.ts";

/** The statuses a revision ends in: it changes no more. */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set([
  "DEPLOYED",
  ...FAILED_STATUSES,
  "SKIPPED",
  "INTERRUPTED",
]);

/** Whether a revision in this status has ended. */
export const isTerminalStatus = (status: string): boolean => TERMINAL_STATUSES.has(status);

/** A terminal status that is not a success (what `slipway deploy` exits 1 on). */
export const isFailedStatus = (status: string): boolean => isTerminalStatus(status) && status !== "DEPLOYED";

/** Options of {@link waitForRevision}. */
export interface WaitOptions {
  /** Called once per status seen, in order (the first call with the current status). */
  onStatus?: (status: string, revision: Revision) => void;
  /** Poll interval, when the server's event stream cannot be opened. */
  intervalMs?: number;
  signal?: AbortSignal;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

/** One revision of a deployment (404 as `SlipwayError` when it is not one of its revisions). */
export function getRevision(client: Slipway, deploymentId: string, revisionId: string): Promise<Revision> {
  return unwrap(
    client.api.GET("/v2/deployments/{deployment_id}/revisions/{revision_id}", {
      params: { path: { deployment_id: deploymentId, revision_id: revisionId } },
    }),
  );
}

/** Reports the statuses of `rev` not yet reported (from its `status_history`); answers how many now are. */
function report(rev: Revision, reported: number, opts: WaitOptions): number {
  const history = rev.status_history.length ? rev.status_history.map((h) => h.status) : [rev.status];
  for (const status of history.slice(reported)) opts.onStatus?.(status, rev);
  return Math.max(reported, history.length);
}

/**
 * Waits until the revision's status is terminal and returns it. It follows the workspace's event
 * stream (`GET /v2/events`, `revision.status_changed`) and reads the revision once when the stream is
 * open and again on each of its status events, so it asks the server nothing while nothing changes;
 * a dropped stream resumes after its last event. Only when the stream cannot be opened (an older
 * server) does it poll every `intervalMs`. Statuses passed between two reads are still reported, from
 * the revision's `status_history`.
 */
export async function waitForRevision(
  client: Slipway,
  deploymentId: string,
  revisionId: string,
  opts: WaitOptions = {},
): Promise<Revision> {
  const stop = new AbortController();
  const onAbort = () => stop.abort(opts.signal?.reason);
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  let events: AsyncGenerator<SseEvent> | undefined;
  try {
    events = await openStream(client, "/v2/events?types=revision.status_changed", { signal: stop.signal });
  } catch (err) {
    if (opts.signal?.aborted) throw err;
  }
  try {
    let rev = await getRevision(client, deploymentId, revisionId);
    let reported = report(rev, 0, opts);
    if (events === undefined) {
      while (!isTerminalStatus(rev.status)) {
        await sleep(opts.intervalMs ?? 1000, opts.signal);
        rev = await getRevision(client, deploymentId, revisionId);
        reported = report(rev, reported, opts);
      }
      return rev;
    }
    while (!isTerminalStatus(rev.status)) {
      const next = await events.next();
      if (next.done) throw opts.signal?.reason ?? new Error("The event stream ended.");
      const announced = announcedStatus(next.value, revisionId);
      if (announced === undefined) continue;
      rev = await getRevision(client, deploymentId, revisionId);
      // Behind a load balancer the read may reach a server that has not heard of the change yet
      // (its read cache catches up within milliseconds); after the last event nothing else would
      // wake this loop, so a read that lags an announced end is repeated until it shows one.
      for (let delay = 10; isTerminalStatus(announced) && !isTerminalStatus(rev.status); delay *= 2) {
        if (delay > STALE_READ_MAX_MS)
          throw new Error(`Revision ${revisionId} did not show ${announced} when read.`);
        await sleep(delay, opts.signal);
        rev = await getRevision(client, deploymentId, revisionId);
      }
      reported = report(rev, reported, opts);
    }
    return rev;
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
    stop.abort();
    await events?.return(undefined);
  }
}

/** How long reads may lag an announced end before the wait gives up (10 ms doubling: about 5 s). */
const STALE_READ_MAX_MS = 2_560;

/** The status a `revision.status_changed` event of this revision announces; undefined for other events. */
function announcedStatus(ev: SseEvent, revisionId: string): string | undefined {
  if (ev.event !== "revision.status_changed") return undefined;
  try {
    const body = JSON.parse(ev.data) as { data?: { revision_id?: unknown; status?: unknown } };
    if (body.data?.revision_id !== revisionId) return undefined;
    return typeof body.data.status === "string" ? body.data.status : "";
  } catch {
    return undefined;
  }
}

/** Options of {@link followLogs}. */
export interface FollowOptions {
  type: "build" | "deploy";
  /** Only lines stored after this instant. */
  since?: string;
  signal?: AbortSignal;
}

/** One log line of the stream, with the id that resumes after it. */
export interface StreamedLine extends LogLine {
  id: string;
}

/**
 * Follows a revision's log over server-sent events: the stored lines, then new ones. A build log
 * ends when the revision is terminal; a deploy log until `signal` aborts. A dropped connection is
 * resumed after the last line seen.
 */
export async function* followLogs(
  client: Slipway,
  deploymentId: string,
  revisionId: string,
  opts: FollowOptions,
): AsyncGenerator<StreamedLine> {
  const query = new URLSearchParams({ type: opts.type });
  if (opts.since) query.set("since", opts.since);
  const path = `/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?${query}`;
  const events = await openStream(client, path, { signal: opts.signal });
  for await (const ev of events) {
    if (ev.event === "end") return;
    const line = JSON.parse(ev.data) as LogLine;
    yield { ...line, id: ev.id ?? "" };
  }
}
