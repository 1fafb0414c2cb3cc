// A deployment's custom domains (docs/domains.md): each with its verification and certificate state
// and the TXT record that verifies it; members add and remove.
import { useState } from "preact/hooks";
import { unwrap } from "../../sdk/client.ts";
import type { Session } from "./session.ts";
import { ErrorBox, useAction, useLoad } from "./ui.tsx";

export function Domains({
  session,
  deploymentId,
  onChanged,
}: {
  session: Session;
  deploymentId: string;
  /** custom_url may follow a removed domain: the page reloads the deployment. */
  onChanged: () => void;
}) {
  const { client } = session;
  const path = { deployment_id: deploymentId };
  const domains = useLoad(
    () => unwrap(client.api.GET("/v2/deployments/{deployment_id}/domains", { params: { path } })),
    [deploymentId],
  );
  const [hostname, setHostname] = useState("");
  const action = useAction(() => {
    setHostname("");
    domains.reload();
    onChanged();
  });
  const writable = session.role !== "viewer";
  const add = (e: Event) => {
    e.preventDefault();
    action.run(() =>
      unwrap(
        client.api.POST("/v2/deployments/{deployment_id}/domains", {
          params: { path },
          body: { hostname: hostname.trim() },
        }),
      ),
    );
  };
  const remove = (domainId: string) =>
    action.run(() =>
      unwrap(
        client.api.DELETE("/v2/deployments/{deployment_id}/domains/{domain_id}", {
          params: { path: { ...path, domain_id: domainId } },
        }),
      ),
    );
  return (
    <div>
      <ErrorBox error={domains.error ?? action.error} />
      {domains.data?.length ? (
        <table>
          <thead>
            <tr>
              <th>Hostname</th>
              <th>Verification</th>
              <th>TXT record</th>
              <th>Certificate</th>
              {writable && <th />}
            </tr>
          </thead>
          <tbody>
            {domains.data.map((d) => (
              <tr data-domain={d.hostname}>
                <td>{d.hostname}</td>
                <td>
                  <span class="status">{d.verification.status}</span>
                  {d.verification.reason && <div class="muted domain-reason">{d.verification.reason}</div>}
                </td>
                <td>
                  <code>{d.verification.record_name}</code> = <code>{d.verification.token}</code>
                </td>
                <td>
                  {d.certificate.status}
                  {d.certificate.reason && <div class="muted">{d.certificate.reason}</div>}
                </td>
                {writable && (
                  <td>
                    <button
                      type="button"
                      class="link"
                      aria-label={`Remove domain ${d.hostname}`}
                      disabled={action.busy}
                      onClick={() => remove(d.id)}
                    >
                      Remove
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p>{domains.data ? "No custom domains." : "Loading…"}</p>
      )}
      {writable && (
        <form class="toolbar" onSubmit={add} aria-label="Add a domain">
          <input
            placeholder="www.example.com"
            aria-label="Hostname"
            value={hostname}
            required
            onInput={(e) => setHostname(e.currentTarget.value)}
          />
          <button type="submit" disabled={action.busy || !hostname.trim()}>
            Add domain
          </button>
        </form>
      )}
    </div>
  );
}
