// Following one revision to its end (statuses and build log), and reading why it failed.
// Browser-safe.
import { type Deployment, type LogLine, type Revision, type Slipway, unwrap } from "./client.ts";
import { followLogs, isFailedStatus, waitForRevision } from "./revisions.ts";

/** What {@link followRevision} reports: each status of the revision, each build-log line. */
export type RevisionEvent =
  | { type: "status"; status: string; revision: Revision }
  | { type: "log"; stream: "build"; at: string; line: string };

export interface FollowRevisionOptions {
  /** Stream the build log as `log` events (default true). */
  logs?: boolean;
  /** Aborting stops the wait (the revision goes on) and rejects with the signal's reason. */
  signal?: AbortSignal;
  onEvent?: (event: RevisionEvent) => void;
}

export interface RevisionOutcome {
  /** The deployment as read after the revision ended. */
  deployment: Deployment;
  /** The revision, in its terminal status. */
  revision: Revision;
  /** Where the app answers (`source_config.custom_url`), null before its first deploy. */
  url: string | null;
  /** Whether the revision is DEPLOYED. */
  ok: boolean;
}

/** How long the build log may go on after the revision ended (its stream ends by itself). */
const LOG_GRACE_MS = 3000;

/** Resolves after `ms`, or at once when `done` settles; the timer never outlives the wait. */
async function settledOrAfter(done: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits for the revision to end ({@link waitForRevision}: the workspace's event stream, polling only
 * without one), reporting each status and, unless `logs` is false, each build-log line as it is
 * written. Resolves with the terminal revision, the deployment read after it and its URL; a failed
 * revision resolves with `ok: false` (see {@link failureReason}, {@link failedStep}, {@link logTail}).
 */
export async function followRevision(
  client: Slipway,
  deploymentId: string,
  revisionId: string,
  opts: FollowRevisionOptions = {},
): Promise<RevisionOutcome> {
  const stop = new AbortController();
  const onAbort = () => stop.abort(opts.signal?.reason);
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  const emit = (e: RevisionEvent) => opts.onEvent?.(e);
  const logs =
    opts.logs === false
      ? Promise.resolve()
      : (async () => {
          for await (const l of followLogs(client, deploymentId, revisionId, {
            type: "build",
            signal: stop.signal,
          }))
            emit({ type: "log", stream: "build", at: l.at, line: l.line });
        })().catch(() => undefined);
  try {
    const revision = await waitForRevision(client, deploymentId, revisionId, {
      intervalMs: 500,
      signal: opts.signal,
      onStatus: (status, rev) => emit({ type: "status", status, revision: rev }),
    });
    // The build stream ends by itself once the revision is terminal: its last lines come first.
    await settledOrAfter(logs, LOG_GRACE_MS);
    const deployment = await unwrap(
      client.api.GET("/v2/deployments/{deployment_id}", {
        params: { path: { deployment_id: deploymentId } },
      }),
    );
    const url = deployment.source_config.custom_url ?? null;
    return { deployment, revision, url, ok: !isFailedStatus(revision.status) };
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
    stop.abort();
    await logs;
  }
}

/**
 * The step whose log tells why the revision failed: `deploy` once it had reached the deploy step
 * (DEPLOY_FAILED, or interrupted while deploying), `build` before (BUILD_FAILED, CREATE_FAILED);
 * null when it never ran (SKIPPED) or did not fail.
 */
export function failedStep(revision: Revision): "build" | "deploy" | null {
  if (!isFailedStatus(revision.status) || revision.status === "SKIPPED") return null;
  if (revision.status === "DEPLOY_FAILED") return "deploy";
  if (revision.status === "BUILD_FAILED" || revision.status === "CREATE_FAILED") return "build";
  const deploying = revision.status_history.some(
    (h) => h.status === "AWAITING_DEPLOY" || h.status === "DEPLOYING",
  );
  return deploying ? "deploy" : "build";
}

/**
 * Why the revision failed: its `status_message`, the reason alone (a `<STATUS>: ` prefix that older
 * servers wrote is dropped); null when there is none.
 */
export function failureReason(revision: Revision): string | null {
  const message = revision.status_message?.trim();
  if (!message) return null;
  const prefix = `${revision.status}: `;
  return message.startsWith(prefix) ? message.slice(prefix.length) : message;
}

/** The last `lines` lines of a revision's build or deploy log. */
export async function logTail(
  client: Slipway,
  deploymentId: string,
  revisionId: string,
  type: "build" | "deploy",
  lines = 20,
): Promise<LogLine[]> {
  // At most 5000 lines are kept per revision and stream: one page holds them all.
  const all = await unwrap(
    client.api.GET("/v2/deployments/{deployment_id}/revisions/{revision_id}/logs", {
      params: {
        path: { deployment_id: deploymentId, revision_id: revisionId },
        query: { type, limit: 5000 },
      },
    }),
  );
  return all.slice(-lines);
}
