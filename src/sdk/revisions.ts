// What every client does with a revision: wait for it to end, follow its logs. Browser-safe.
import { type LogLine, type Revision, type Slipway, SlipwayError, unwrap } from "./client.ts";

export const TERMINAL_STATUSES: ReadonlySet<string> = new Set([
  "DEPLOYED",
  "CREATE_FAILED",
  "BUILD_FAILED",
  "DEPLOY_FAILED",
  "SKIPPED",
  "INTERRUPTED",
]);

export const isTerminalStatus = (status: string): boolean => TERMINAL_STATUSES.has(status);

/** A terminal status that is not a success (what `slipway deploy` exits 1 on). */
export const isFailedStatus = (status: string): boolean => isTerminalStatus(status) && status !== "DEPLOYED";

export interface WaitOptions {
  /** Called once per status seen, in order (the first call with the current status). */
  onStatus?: (status: string, revision: Revision) => void;
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

export function getRevision(client: Slipway, deploymentId: string, revisionId: string): Promise<Revision> {
  return unwrap(
    client.api.GET("/v2/deployments/{deployment_id}/revisions/{revision_id}", {
      params: { path: { deployment_id: deploymentId, revision_id: revisionId } },
    }),
  );
}

/**
 * Polls the revision until its status is terminal and returns it. Statuses passed between two polls
 * are still reported, from the revision's `status_history`.
 */
export async function waitForRevision(
  client: Slipway,
  deploymentId: string,
  revisionId: string,
  opts: WaitOptions = {},
): Promise<Revision> {
  let reported = 0;
  for (;;) {
    const rev = await getRevision(client, deploymentId, revisionId);
    const history = rev.status_history.length ? rev.status_history.map((h) => h.status) : [rev.status];
    for (const status of history.slice(reported)) opts.onStatus?.(status, rev);
    reported = Math.max(reported, history.length);
    if (isTerminalStatus(rev.status)) return rev;
    await sleep(opts.intervalMs ?? 1000, opts.signal);
  }
}

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

/** Splits a server-sent-events body into events (`event`, `data`, `id`). */
async function* sseEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ event: string; data: string; id?: string }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut = buffer.indexOf("\n\n");
      while (cut >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        cut = buffer.indexOf("\n\n");
        let event = "message";
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "event") event = val;
          else if (field === "data") data.push(val);
          else if (field === "id") id = val;
        }
        if (data.length) yield { event, data: data.join("\n"), id };
      }
    }
  } finally {
    reader.releaseLock();
  }
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
  let lastId: string | undefined;
  const query = new URLSearchParams({ type: opts.type });
  if (opts.since) query.set("since", opts.since);
  const url = `${client.baseUrl}/v2/deployments/${deploymentId}/revisions/${revisionId}/logs?${query}`;
  for (;;) {
    const res = await client.fetch(url, {
      headers: {
        ...client.headers,
        accept: "text/event-stream",
        ...(lastId ? { "last-event-id": lastId } : {}),
      },
      signal: opts.signal,
    });
    if (!res.ok || !res.body) {
      const text = await res.text();
      let detail = `The server answered ${res.status}.`;
      try {
        const d = (JSON.parse(text) as { detail?: unknown }).detail;
        if (typeof d === "string") detail = d;
      } catch {
        // Not JSON: keep the status sentence.
      }
      throw new SlipwayError(res.status, detail);
    }
    try {
      for await (const ev of sseEvents(res.body)) {
        if (ev.event === "end") return;
        const line = JSON.parse(ev.data) as LogLine;
        if (ev.id) lastId = ev.id;
        yield { ...line, id: ev.id ?? "" };
      }
    } catch (err) {
      if (opts.signal?.aborted) return;
      // A connection cut mid-stream: resume below.
      if (!(err instanceof TypeError)) throw err;
    }
    if (opts.signal?.aborted) return;
    await sleep(500, opts.signal).catch(() => undefined);
    if (opts.signal?.aborted) return;
  }
}
