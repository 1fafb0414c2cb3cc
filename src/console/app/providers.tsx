// OAuth providers: the list (with each one's callback URL), edit and delete, and the add form.
import { useState } from "preact/hooks";
import { unwrap } from "../../sdk/client.ts";
import { callbackUrl, ProviderForm } from "./provider-form.tsx";
import type { Session } from "./session.ts";
import { ErrorBox, Section, useAction, useLoad } from "./ui.tsx";

export function ProvidersPage({ session }: { session: Session }) {
  const api = session.client.api;
  const list = useLoad(() => unwrap(api.GET("/v2/auth/providers", {})), []);
  const remove = useAction(list.reload);
  const [editing, setEditing] = useState<string>();
  const [notice, setNotice] = useState("");
  // A new form after every save, so that the add form starts empty again.
  const [formKey, setFormKey] = useState(0);
  const writable = session.role !== "viewer";
  const edited = list.data?.find((p) => p.provider_id === editing);
  return (
    <Section title="OAuth providers">
      <ErrorBox error={list.error ?? remove.error} />
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Provider</th>
            <th>Name</th>
            <th>Client id</th>
            <th>PKCE</th>
            <th>Token auth</th>
            <th>Callback URL</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {list.data?.map((p) => (
            <tr data-provider={p.provider_id}>
              <td>{p.provider_id}</td>
              <td>{p.name}</td>
              <td>{p.client_id}</td>
              <td>{p.uses_pkce ? (p.code_challenge_method ?? "yes") : "no"}</td>
              <td>{p.token_endpoint_auth_method}</td>
              <td class="url">
                <code>{callbackUrl(p.provider_id)}</code>
              </td>
              <td>
                {writable && (
                  <div class="toolbar">
                    <button
                      type="button"
                      onClick={() => {
                        setNotice("");
                        setEditing(p.provider_id);
                      }}
                    >
                      Edit
                    </button>
                    <button
                      type="button"
                      onClick={() =>
                        remove.run(() =>
                          unwrap(
                            api.DELETE("/v2/auth/providers/{provider_id}", {
                              params: { path: { provider_id: p.provider_id } },
                            }),
                          ),
                        )
                      }
                    >
                      Delete
                    </button>
                  </div>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && !list.data.length && <p class="muted">No providers.</p>}
      {writable && (
        <ProviderForm
          key={`${edited?.provider_id ?? ""}/${formKey}`}
          session={session}
          editing={edited}
          done={(message) => {
            setNotice(message);
            setEditing(undefined);
            setFormKey((k) => k + 1);
            list.reload();
          }}
        />
      )}
    </Section>
  );
}
