// The deployments list: search by name, status filter, paging.
import { useState } from "preact/hooks";
import { unwrap } from "../../sdk/client.ts";
import type { Session } from "./session.ts";
import { ErrorBox, Status, useEvents, useLoad } from "./ui.tsx";

const STATUSES = ["", "READY", "AWAITING_DATABASE", "UNUSED", "AWAITING_DELETE", "UNKNOWN"];
const PAGE = 20;
/** What changes a row of the list: the page refreshes on these, not on a timer. */
const LIST_EVENTS = ["deployment.created", "deployment.deleted", "deployment.status_changed"];

export function DeploymentsPage({ session }: { session: Session }) {
  const [search, setSearch] = useState("");
  const [status, setStatus] = useState("");
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
              ...(status ? { status } : {}),
            },
          },
        }),
      ),
    [search, status, offset],
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
          value={status}
          onChange={(e) => {
            setStatus(e.currentTarget.value);
            setOffsets([0]);
          }}
        >
          {STATUSES.map((s) => (
            <option value={s}>{s || "any status"}</option>
          ))}
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
                <Status status={d.status} />
              </td>
              <td>{d.source}</td>
              <td>{d.source_config.custom_url ?? "–"}</td>
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
