// A revision's live log (build or deploy), opening on the log of the step the revision reached.
import { useEffect, useState } from "preact/hooks";
import type { Deployment, Revision } from "../../sdk/client.ts";
import { followLogs } from "../../sdk/revisions.ts";
import type { Session } from "./session.ts";
import { ErrorBox } from "./ui.tsx";

type LogType = "build" | "deploy";

/**
 * The log of the last step the revision reached: a failed deploy opens on the app's own output, a
 * failed build on the build's; a revision that got to deploying (or past it) on the deploy log.
 */
function stepLog(rev: Revision): LogType {
  if (rev.status === "DEPLOY_FAILED") return "deploy";
  if (rev.status === "BUILD_FAILED" || rev.status === "CREATE_FAILED") return "build";
  const reached = new Set([rev.status, ...rev.status_history.map((h) => h.status)]);
  return reached.has("DEPLOYING") || reached.has("DEPLOYED") ? "deploy" : "build";
}

/** The revision's log, live. The tab follows the revision's step until the user picks one. */
export function LiveLog({
  session,
  dep,
  revision,
}: {
  session: Session;
  dep: Deployment;
  revision: Revision;
}) {
  const [picked, setPicked] = useState<LogType>();
  const type = picked ?? stepLog(revision);
  const revisionId = revision.id;
  const [lines, setLines] = useState<string[]>([]);
  const [error, setError] = useState<string>();
  useEffect(() => {
    const abort = new AbortController();
    setLines([]);
    setError(undefined);
    (async () => {
      for await (const l of followLogs(session.client, dep.id, revisionId, { type, signal: abort.signal })) {
        setLines((prev) => [...prev.slice(-1999), l.line]);
      }
    })().catch((err: unknown) => {
      if (!abort.signal.aborted) setError(err instanceof Error ? err.message : String(err));
    });
    return () => abort.abort();
  }, [dep.id, revisionId, type, session]);
  return (
    <div>
      <div class="tabs" role="tablist">
        {(["build", "deploy"] as const).map((t) => (
          <button
            type="button"
            role="tab"
            aria-selected={t === type}
            aria-controls="revision-log"
            onClick={() => setPicked(t)}
          >
            {t} log
          </button>
        ))}
      </div>
      <ErrorBox error={error} />
      <pre class="log" id="revision-log" role="tabpanel" data-testid="log" data-log={type}>
        {lines.join("\n") || "(no lines yet)"}
      </pre>
    </div>
  );
}
