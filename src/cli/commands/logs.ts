// `slipway logs NAME`: a revision's deploy (or build) log; with -f it follows, and moves on to each
// newer revision as it becomes the active one (or, for --build, as it starts building).
import { type Deployment, type Revision, type Slipway, SlipwayError, unwrap } from "../../sdk/client.ts";
import { followLogs, getRevision } from "../../sdk/revisions.ts";
import { openStream, type SseEvent } from "../../sdk/sse.ts";
import type { FlagSpec } from "../args.ts";
import { atMost, type Context, need, requireDeployment } from "../context.ts";
import { resolveRevision } from "../revision-ref.ts";

export const logsFlags: FlagSpec = {
  booleans: ["follow", "build"],
  values: ["revision", "since"],
  aliases: { f: "follow" },
};

type Stream = "build" | "deploy";

/** Poll interval when the server has no event stream. */
const POLL_MS = 2000;

/** The status at which a newer revision takes over the log followed: active (deploy) or building. */
const TAKES_OVER: Record<Stream, string> = { deploy: "DEPLOYED", build: "BUILDING" };

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

async function defaultRevision(client: Slipway, dep: Deployment): Promise<Revision> {
  const id = dep.active_revision_id ?? dep.latest_revision_id;
  if (!id) throw new SlipwayError(404, `Deployment ${dep.name} has no revision yet.`);
  return getRevision(client, dep.id, id);
}

export async function logs(ctx: Context): Promise<void> {
  const { args, out } = ctx;
  atMost(ctx, 1);
  const client = ctx.client();
  const name = need(ctx, 0, "deployment NAME");
  const type: Stream = args.bool("build") ? "build" : "deploy";
  const since = args.value("since");
  const ref = args.value("revision");
  const print = (rev: Revision) => (l: { at: string; line: string }) => {
    out.event({ event: "log", stream: type, revision_id: rev.id, at: l.at, line: l.line });
    out.line(l.line);
  };
  if (!args.bool("follow")) {
    const dep = await requireDeployment(client, name);
    const rev = ref ? await resolveRevision(client, dep, ref) : await defaultRevision(client, dep);
    const lines = await unwrap(
      client.api.GET("/v2/deployments/{deployment_id}/revisions/{revision_id}/logs", {
        params: {
          path: { deployment_id: dep.id, revision_id: rev.id },
          query: { type, limit: 5000, ...(since ? { since } : {}) },
        },
      }),
    );
    lines.forEach(print(rev));
    return;
  }
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once("SIGINT", onSigint);
  try {
    if (ref) {
      // A revision named on the command line is the one followed, whatever becomes active.
      const dep = await requireDeployment(client, name);
      const rev = await resolveRevision(client, dep, ref);
      for await (const l of followLogs(client, dep.id, rev.id, { type, since, signal: abort.signal }))
        print(rev)(l);
      return;
    }
    await followAcross(ctx, name, type, since, abort.signal, print);
  } finally {
    process.off("SIGINT", onSigint);
  }
}

/** Resolves with the next revision that takes over from `current`, or undefined once `signal` aborts. */
type NextRevision = (dep: Deployment, current: Revision) => Promise<Revision | undefined>;

function fromEvents(client: Slipway, events: AsyncGenerator<SseEvent>, type: Stream): NextRevision {
  return async (dep, current) => {
    for (;;) {
      const next = await events.next();
      if (next.done) return undefined;
      let data: { deployment_id?: unknown; revision_id?: unknown; status?: unknown } = {};
      try {
        data = (JSON.parse(next.value.data) as { data?: typeof data }).data ?? {};
      } catch {
        continue;
      }
      if (data.deployment_id !== dep.id || data.status !== TAKES_OVER[type]) continue;
      if (typeof data.revision_id !== "string" || data.revision_id === current.id) continue;
      const rev = await getRevision(client, dep.id, data.revision_id);
      if (rev.number > current.number) return rev;
    }
  };
}

function fromPolling(client: Slipway, type: Stream, signal: AbortSignal): NextRevision {
  return async (dep, current) => {
    for (;;) {
      await sleep(POLL_MS, signal);
      if (signal.aborted) return undefined;
      const now = await unwrap(
        client.api.GET("/v2/deployments/{deployment_id}", { params: { path: { deployment_id: dep.id } } }),
      );
      const id = type === "deploy" ? now.active_revision_id : now.latest_revision_id;
      if (!id || id === current.id) continue;
      const rev = await getRevision(client, dep.id, id);
      if (
        rev.number > current.number &&
        (type === "deploy" || rev.status_history.some((h) => h.status === "BUILDING"))
      )
        return rev;
    }
  };
}

async function followAcross(
  ctx: Context,
  name: string,
  type: Stream,
  since: string | undefined,
  signal: AbortSignal,
  print: (rev: Revision) => (l: { at: string; line: string }) => void,
): Promise<void> {
  const client = ctx.client();
  // Stopped on the way out, whatever the way: a pending read of the events would hold it.
  const watching = new AbortController();
  const stopWatching = () => watching.abort();
  signal.addEventListener("abort", stopWatching, { once: true });
  // The event stream is open before the deployment is read: a revision that takes over after the
  // read is heard of. Without one (an older server), the deployment is polled.
  let events: AsyncGenerator<SseEvent> | undefined;
  try {
    events = await openStream(client, "/v2/events?types=revision.status_changed", {
      signal: watching.signal,
    });
  } catch (err) {
    if (signal.aborted) return;
    if (err instanceof SlipwayError && (err.status === 0 || err.status === 401 || err.status === 403))
      throw err;
  }
  const nextRevision = events ? fromEvents(client, events, type) : fromPolling(client, type, watching.signal);
  try {
    const dep = await requireDeployment(client, name);
    let current = await defaultRevision(client, dep);
    let from = since;
    for (;;) {
      const follow = new AbortController();
      const stop = () => follow.abort();
      signal.addEventListener("abort", stop, { once: true });
      const printing = (async () => {
        for await (const l of followLogs(client, dep.id, current.id, {
          type,
          since: from,
          signal: follow.signal,
        }))
          print(current)(l);
      })().catch((err: unknown) => {
        if (!follow.signal.aborted) throw err;
      });
      // A log that fails (not one that ends: a build log ends with its build) ends the follow.
      const failed = printing.then(() => new Promise<never>(() => undefined));
      const next = await Promise.race([nextRevision(dep, current), failed]);
      follow.abort();
      signal.removeEventListener("abort", stop);
      await printing;
      if (!next) return;
      current = next;
      from = undefined;
      ctx.out.line(`— now following revision #${next.number} (${next.id})`);
      ctx.out.event({ event: "switch", revision_id: next.id, revision_number: next.number });
    }
  } finally {
    signal.removeEventListener("abort", stopWatching);
    watching.abort();
    await events?.return(undefined);
  }
}
