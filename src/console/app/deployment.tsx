// Why over 300 lines: the one page of a deployment, whose panels share its state and event stream.
// One deployment: status, URL, revisions timeline, live logs, a listener's pods, actions, secrets,
// spec, tags, charts.
import { useEffect, useState } from "preact/hooks";
import { createSlipway, type Deployment, type Revision, SlipwayError, unwrap } from "../../sdk/client.ts";
import { isTerminalStatus } from "../../sdk/revisions.ts";
import { Metrics } from "./charts.tsx";
import { Domains } from "./domains.tsx";
import { LiveLog } from "./logs.tsx";
import { Pods } from "./pods.tsx";
import { apiBase, type Session, storedKey } from "./session.ts";
import { Tags } from "./tags.tsx";
import { ErrorBox, ExternalLink, Section, Status, useAction, useEvents, useLoad } from "./ui.tsx";

const PAGE_EVENTS = [
  "revision.status_changed",
  "deployment.status_changed",
  "deployment.unhealthy",
  "deployment.healthy",
];

function Secrets({ session, dep, onSaved }: { session: Session; dep: Deployment; onSaved: () => void }) {
  const [rows, setRows] = useState(dep.secrets.map((s) => ({ ...s })));
  const action = useAction(onSaved);
  useEffect(() => setRows(dep.secrets.map((s) => ({ ...s }))), [dep]);
  const writable = session.role !== "viewer";
  const save = () =>
    action.run(() =>
      unwrap(
        session.client.api.PATCH("/v2/deployments/{deployment_id}", {
          params: { path: { deployment_id: dep.id } },
          body: { secrets: rows.filter((r) => r.name) },
        }),
      ),
    );
  return (
    <div class="secrets">
      <p class="muted">Values are shown masked; a masked value is kept as stored when you save.</p>
      {rows.map((r, i) => (
        <div class="row">
          <input
            aria-label="Secret name"
            value={r.name}
            disabled={!writable}
            onInput={(e) =>
              setRows(rows.map((x, j) => (j === i ? { ...x, name: e.currentTarget.value } : x)))
            }
          />
          <input
            aria-label={`Value of ${r.name}`}
            value={r.value}
            disabled={!writable}
            onInput={(e) =>
              setRows(rows.map((x, j) => (j === i ? { ...x, value: e.currentTarget.value } : x)))
            }
          />
          {writable && (
            <button type="button" onClick={() => setRows(rows.filter((_, j) => j !== i))}>
              Remove
            </button>
          )}
        </div>
      ))}
      {writable && (
        <div class="toolbar">
          <button type="button" onClick={() => setRows([...rows, { name: "", value: "" }])}>
            Add secret
          </button>
          <button type="button" class="primary" disabled={action.busy} onClick={save}>
            Save secrets (new revision)
          </button>
        </div>
      )}
      <ErrorBox error={action.error} />
    </div>
  );
}

function Timeline({
  session,
  dep,
  revisions,
  selected,
  select,
  changed,
}: {
  session: Session;
  dep: Deployment;
  revisions: Revision[];
  selected?: string;
  select: (id: string) => void;
  changed: () => void;
}) {
  const action = useAction(changed);
  const writable = session.role !== "viewer";
  const path = (rid: string) => ({ params: { path: { deployment_id: dep.id, revision_id: rid } } });
  return (
    <ol class="timeline">
      <ErrorBox error={action.error} />
      {revisions.map((r) => (
        <li class={r.id === selected ? "selected" : ""}>
          <div class="toolbar">
            <button type="button" class="link" onClick={() => select(r.id)}>
              #{r.number} {r.id.slice(0, 8)}
            </button>
            <Status status={r.status} />
            {r.id === dep.active_revision_id && <span class="badge">active</span>}
            {writable &&
              r.id !== dep.active_revision_id &&
              r.status_history.some((h) => h.status === "DEPLOYED") && (
                <button
                  type="button"
                  onClick={() =>
                    action.run(() =>
                      unwrap(
                        session.client.api.POST(
                          "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy",
                          path(r.id),
                        ),
                      ),
                    )
                  }
                >
                  Roll back to this
                </button>
              )}
            {writable && !isTerminalStatus(r.status) && (
              <button
                type="button"
                onClick={() =>
                  action.run(() =>
                    unwrap(
                      session.client.api.POST(
                        "/v2/deployments/{deployment_id}/revisions/{revision_id}/interrupt",
                        path(r.id),
                      ),
                    ),
                  )
                }
              >
                Interrupt
              </button>
            )}
          </div>
          <div class="muted">
            {r.status_history.map((h) => `${h.status} ${new Date(h.at).toLocaleTimeString()}`).join(" → ")}
          </div>
          {r.status_message && <div class="error">{r.status_message}</div>}
        </li>
      ))}
    </ol>
  );
}

/**
 * Another of the key's workspaces that holds deployment `id` (a link from the hosted service's CLI
 * names no workspace); undefined when none does.
 */
async function workspaceHolding(session: Session, id: string): Promise<string | undefined> {
  const apiKey = storedKey();
  if (!apiKey) return undefined;
  const workspaces = await unwrap(session.client.api.GET("/v1/workspaces", {}));
  const found = await Promise.all(
    workspaces
      .filter((w) => w.id !== session.workspace)
      .map(async (w) => {
        const client = createSlipway({ baseUrl: apiBase(), apiKey, workspace: w.id });
        const res = await client.api.GET("/v2/deployments/{deployment_id}", {
          params: { path: { deployment_id: id } },
        });
        return res.response.ok ? w.id : undefined;
      }),
  );
  return found.find((w) => w !== undefined);
}

export function DeploymentPage({
  session,
  id,
  onWorkspace,
}: {
  session: Session;
  id: string;
  /** Switches the console to the workspace that holds this deployment. */
  onWorkspace: (workspace: string) => void;
}) {
  const [selected, setSelected] = useState<string>();
  const dep = useLoad(async () => {
    try {
      return await unwrap(
        session.client.api.GET("/v2/deployments/{deployment_id}", {
          params: { path: { deployment_id: id } },
        }),
      );
    } catch (err) {
      if (!(err instanceof SlipwayError) || err.status !== 404) throw err;
      const home = await workspaceHolding(session, id).catch(() => undefined);
      if (home === undefined) throw err;
      // The page is made again in that workspace.
      onWorkspace(home);
      throw new Error("Opening the deployment in its workspace…");
    }
  }, [id]);
  const revs = useLoad(
    () =>
      unwrap(
        session.client.api.GET("/v2/deployments/{deployment_id}/revisions", {
          params: { path: { deployment_id: id }, query: { limit: 50 } },
        }),
      ),
    [id],
  );
  // Bumped by this deployment's events: the Pods panel reads its listing again.
  const [changes, setChanges] = useState(0);
  const reload = () => {
    dep.reload();
    revs.reload();
    setChanges((n) => n + 1);
  };
  // The page refreshes when the server says this deployment or one of its revisions changed.
  useEvents(session.client, PAGE_EVENTS, (data) => {
    if (data.deployment_id === id) reload();
  });
  const redeploy = useAction(reload);
  const d = dep.data;
  if (dep.error) return <ErrorBox error={dep.error} />;
  if (!d) return <p class="muted">Loading…</p>;
  const list = revs.data?.resources ?? [];
  const shown = list.find((r) => r.id === selected) ?? list[0];
  return (
    <section>
      <h2>
        {d.name}{" "}
        {d.latest_revision_status && <Status status={d.latest_revision_status} title="Latest revision" />}{" "}
        <small class="muted" title="Deployment status">
          {d.status}
        </small>
      </h2>
      <p>
        URL:{" "}
        {d.source_config.custom_url ? (
          <ExternalLink href={d.source_config.custom_url} testId="app-url" />
        ) : (
          "–"
        )}{" "}
        · source {d.source} · id <code>{d.id}</code>
      </p>
      {session.role !== "viewer" && d.latest_revision_id && (
        <div class="toolbar">
          <button
            type="button"
            disabled={redeploy.busy}
            onClick={() =>
              redeploy.run(() =>
                unwrap(
                  session.client.api.POST(
                    "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy",
                    {
                      params: { path: { deployment_id: d.id, revision_id: d.latest_revision_id ?? "" } },
                    },
                  ),
                ),
              )
            }
          >
            Redeploy
          </button>
        </div>
      )}
      <ErrorBox error={redeploy.error} />
      <div class="columns">
        <Section title="Revisions">
          <ErrorBox error={revs.error} />
          {revs.data && (
            <Timeline
              session={session}
              dep={d}
              revisions={revs.data.resources}
              selected={shown?.id}
              select={setSelected}
              changed={reload}
            />
          )}
        </Section>
        <Section title="Logs">
          {shown ? (
            <LiveLog key={shown.id} session={session} dep={d} revision={shown} />
          ) : (
            <p>No revision.</p>
          )}
        </Section>
      </div>
      {typeof d.source_config.listener_id === "string" && (
        <Section title="Pods">
          <Pods session={session} deploymentId={d.id} changes={changes} />
        </Section>
      )}
      <Section title="Traffic (last hour)">
        <Metrics session={session} deploymentId={d.id} />
      </Section>
      <Section title="Secrets">
        <Secrets session={session} dep={d} onSaved={reload} />
      </Section>
      <Section title="Resource spec">
        <pre>{JSON.stringify(d.source_config.resource_spec ?? {}, null, 2)}</pre>
      </Section>
      <Section title="Tags">
        <Tags session={session} deploymentId={d.id} />
      </Section>
      <Section title="Domains">
        <Domains session={session} deploymentId={d.id} onChanged={dep.reload} />
      </Section>
    </section>
  );
}
