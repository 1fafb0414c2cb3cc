// Small shared pieces: loading data, errors, status badges, tables.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Slipway } from "../../sdk/client.ts";
import { openStream } from "../../sdk/sse.ts";

export function useLoad<T>(
  load: () => Promise<T>,
  deps: unknown[],
): { data?: T; error?: string; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (data) => live && setState({ data }),
      (err: unknown) => live && setState({ error: err instanceof Error ? err.message : String(err) }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function ErrorBox({ error }: { error?: string }) {
  return error ? (
    <pre class="error" role="alert">
      {error}
    </pre>
  ) : null;
}

export function Status({ status, title }: { status: string; title?: string }) {
  const kind = /FAILED|UNKNOWN/.test(status)
    ? "bad"
    : status === "DEPLOYED" || status === "READY"
      ? "good"
      : /SKIPPED|INTERRUPTED|UNUSED/.test(status)
        ? "muted"
        : "busy";
  return (
    <span class={`status ${kind}`} title={title}>
      {status}
    </span>
  );
}

/**
 * A link out of the console (an app's URL): a new tab that cannot reach back into this one. Only
 * http(s) addresses become links (never `javascript:`), others are shown as text.
 */
export function ExternalLink({ href, testId }: { href: string; testId?: string }) {
  if (!/^https?:\/\//i.test(href)) return <span data-testid={testId}>{href}</span>;
  return (
    <a href={href} target="_blank" rel="noopener noreferrer" data-testid={testId}>
      {href}
    </a>
  );
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

/** Runs an action, reporting its error; `done` after success. */
export function useAction(done: () => void): {
  run: (f: () => Promise<unknown>) => void;
  error?: string;
  busy: boolean;
} {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const run = (f: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    f().then(
      () => {
        setBusy(false);
        done();
      },
      (err: unknown) => {
        setBusy(false);
        setError(err instanceof Error ? err.message : String(err));
      },
    );
  };
  return { run, error, busy };
}

/**
 * Calls `onEvent` with the `data` of each workspace event of `types` while the page is open, from
 * the server's event stream (`GET /v2/events`, resumed after a dropped connection): pages refresh
 * when something changes instead of on a timer.
 */
export function useEvents(
  client: Slipway,
  types: readonly string[],
  onEvent: (data: Record<string, unknown>) => void,
): void {
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    const abort = new AbortController();
    const query = types.map((t) => `types=${encodeURIComponent(t)}`).join("&");
    (async () => {
      const events = await openStream(client, `/v2/events?${query}`, { signal: abort.signal });
      for await (const ev of events) {
        const body = JSON.parse(ev.data) as { data?: Record<string, unknown> };
        handler.current(body.data ?? {});
      }
    })().catch(() => undefined);
    return () => abort.abort();
  }, [client, types.join(",")]);
}
