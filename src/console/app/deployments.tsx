// The deployments list: search by name, status filter, paging. A row's badge is its latest
// revision's state (a crashed app's deployment is still READY; its latest revision is DEPLOY_FAILED).
import { useState } from "preact/hooks";
import { unwrap } from "../../sdk/client.ts";
import { DEPLOYMENT_STATUSES, FAILED_STATUSES, REVISION_STATUSES } from "../../sdk/statuses.ts";
import type { Session } from "./session.ts";
import { ErrorBox, ExternalLink, Status, useEvents, useLoad } from "./ui.tsx";

const FAILED = FAILED_STATUSES.join(",");

/**
 * The filter's value names what it filters: `revision:A,B` the latest revision's state
 * (`latest_revision_status=`), `deployment:S` the deployment's own status (`status=`).
 */
function filterQuery(filter: string): { status?: string; latest_revision_status?: string } {
  const [on, value] = filter.split(":");
  if (!value) return {};
  return on === "revision" ? { latest_revision_status: value } : { status: value };
}
const PAGE = 20;
/** What changes a row of the list: the page refreshes on these, not on a timer. */
const LIST_EVENTS = ["deployment.created", "deployment.deleted", "deployment.status_changed"];

export function DeploymentsPage({ session }: { session: Session }) {
  const [search, setSearch] = useState("");
  const [filter, setFilter] = useState("");
  const [offsets, setOffsets] = useState<number[]>([0]);
  const offset = offsets.at(-1) ?? 0;
  const { data, error, reload } = useLoad(
    () =>
      unwrap(
        session.client.api.GET("/v2/deployments", {
          params: {
            query: {
              limit: PAGE,
              offset,
              ...(search ? { name_contains: search } : {}),
              ...filterQuery(filter),
            },
          },
        }),
      ),
    [search, filter, offset],
  );
  useEvents(session.client, LIST_EVENTS, reload);
  return (
    <section>
      <h2>Deployments</h2>
      <div class="toolbar">
        <input
          type="search"
          placeholder="Search by name"
          aria-label="Search by name"
          value={search}
          onInput={(e) => {
            setSearch(e.currentTarget.value);
            setOffsets([0]);
          }}
        />
        <select
          aria-label="Status"
          value={filter}
          onChange={(e) => {
            setFilter(e.currentTarget.value);
            setOffsets([0]);
          }}
        >
          <option value="">any status</option>
          <optgroup label="Latest revision">
            <option value={`revision:${FAILED}`}>failed (create, build or deploy)</option>
            {REVISION_STATUSES.map((s) => (
              <option value={`revision:${s}`}>{s}</option>
            ))}
          </optgroup>
          <optgroup label="Deployment">
            {DEPLOYMENT_STATUSES.map((s) => (
              <option value={`deployment:${s}`}>{s}</option>
            ))}
          </optgroup>
        </select>
        {session.role !== "viewer" && (
          <a class="button" href="#/new">
            New deployment
          </a>
        )}
      </div>
      <ErrorBox error={error} />
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Status</th>
            <th>Source</th>
            <th>URL</th>
            <th>Updated</th>
          </tr>
        </thead>
        <tbody>
          {data?.resources.map((d) => (
            <tr>
              <td>
                <a href={`#/deployments/${d.id}`}>{d.name}</a>
              </td>
              <td>
                {d.latest_revision_status ? (
                  <>
                    <Status status={d.latest_revision_status} title="Latest revision" />{" "}
                    <small class="muted" title="Deployment status">
                      {d.status}
                    </small>
                  </>
                ) : (
                  <Status status={d.status} title="Deployment status (no revision yet)" />
                )}
              </td>
              <td>{d.source}</td>
              <td class="url">
                {d.source_config.custom_url ? <ExternalLink href={d.source_config.custom_url} /> : "–"}
              </td>
              <td>{new Date(d.updated_at).toLocaleString()}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {data && !data.resources.length && <p class="muted">No deployments.</p>}
      <div class="toolbar">
        <button type="button" disabled={offsets.length < 2} onClick={() => setOffsets(offsets.slice(0, -1))}>
          Previous
        </button>
        <button
          type="button"
          disabled={!data || data.resources.length < PAGE}
          onClick={() => data && setOffsets([...offsets, data.offset])}
        >
          Next
        </button>
      </div>
    </section>
  );
}
