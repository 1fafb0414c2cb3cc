// Integrations, and (admins) API keys and workspaces.
import { useState } from "preact/hooks";
import { unwrap } from "../../sdk/client.ts";
import type { Session } from "./session.ts";
import { ErrorBox, Section, useAction, useLoad } from "./ui.tsx";

export function IntegrationsPage({ session }: { session: Session }) {
  const api = session.client.api;
  const list = useLoad(() => unwrap(api.GET("/v1/integrations/forge/codehost/install", {})), []);
  const [open, setOpen] = useState("");
  const repos = useLoad(
    () =>
      open
        ? unwrap(
            api.GET("/v1/integrations/forge/codehost/{integration_id}/repos", {
              params: { path: { integration_id: open } },
            }),
          )
        : Promise.resolve([]),
    [open],
  );
  return (
    <Section title="Code-host integrations">
      <ErrorBox error={list.error ?? repos.error} />
      <ul>
        {list.data?.map((i) => (
          <li>
            <button type="button" class="link" onClick={() => setOpen(i.id)}>
              {i.name}
            </button>{" "}
            ({i.kind}
            {i.path ? `, ${i.path}` : ""})
            {open === i.id && (
              <ul>
                {repos.data?.map((r) => (
                  <li>
                    {r.owner}/{r.name} — {r.url} ({r.default_branch})
                  </li>
                ))}
              </ul>
            )}
          </li>
        ))}
      </ul>
      {list.data && !list.data.length && <p class="muted">No integrations.</p>}
    </Section>
  );
}

export function AdminPage({ session }: { session: Session }) {
  const api = session.client.api;
  const keys = useLoad(() => unwrap(api.GET("/v1/api-keys", {})), []);
  const workspaces = useLoad(() => unwrap(api.GET("/v1/workspaces", {})), []);
  const [created, setCreated] = useState<string>();
  const [role, setRole] = useState<"admin" | "member" | "viewer">("viewer");
  const [description, setDescription] = useState("");
  const [wsName, setWsName] = useState("");
  const action = useAction(() => {
    keys.reload();
    workspaces.reload();
  });
  return (
    <>
      <Section title="API keys">
        <ErrorBox error={keys.error ?? action.error} />
        {created && (
          <p class="notice">
            New key (shown this once): <code>{created}</code>
          </p>
        )}
        <table>
          <thead>
            <tr>
              <th>Prefix</th>
              <th>Role</th>
              <th>Description</th>
              <th>Revoked</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {keys.data?.map((k) => (
              <tr>
                <td>{k.prefix}</td>
                <td>{k.role}</td>
                <td>{k.description}</td>
                <td>{k.revoked_at ?? "–"}</td>
                <td>
                  {!k.revoked_at && (
                    <button
                      type="button"
                      onClick={() =>
                        action.run(() =>
                          unwrap(api.DELETE("/v1/api-keys/{id}", { params: { path: { id: k.id } } })),
                        )
                      }
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <form
          class="toolbar"
          onSubmit={(e) => {
            e.preventDefault();
            action.run(async () =>
              setCreated((await unwrap(api.POST("/v1/api-keys", { body: { role, description } }))).key),
            );
          }}
        >
          <select
            aria-label="Role"
            value={role}
            onChange={(e) => setRole(e.currentTarget.value as typeof role)}
          >
            <option value="viewer">viewer</option>
            <option value="member">member</option>
            <option value="admin">admin</option>
          </select>
          <input
            placeholder="Description"
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
          <button type="submit">Create key</button>
        </form>
      </Section>
      <Section title="Workspaces">
        <ErrorBox error={workspaces.error} />
        <ul>
          {workspaces.data?.map((w) => (
            <li>
              {w.name} <code>{w.id}</code>
            </li>
          ))}
        </ul>
        <form
          class="toolbar"
          onSubmit={(e) => {
            e.preventDefault();
            action.run(() => unwrap(api.POST("/v1/workspaces", { body: { name: wsName } })));
          }}
        >
          <input
            placeholder="Workspace name"
            value={wsName}
            onInput={(e) => setWsName(e.currentTarget.value)}
          />
          <button type="submit">Create workspace</button>
        </form>
      </Section>
    </>
  );
}
