// A listener deployment's pods as its listener last reported them (GET …/processes): whether its
// active revision serves, why not (deployment.unhealthy's reason), and each pod's state.
import { unwrap } from "../../sdk/client.ts";
import type { Session } from "./session.ts";
import { ErrorBox, useLoad } from "./ui.tsx";

export function Pods({
  session,
  deploymentId,
  changes,
}: {
  session: Session;
  deploymentId: string;
  /** Bumped by the page on each event of this deployment (deployment.unhealthy/healthy among them). */
  changes: number;
}) {
  const list = useLoad(
    () =>
      unwrap(
        session.client.api.GET("/v2/deployments/{deployment_id}/processes", {
          params: { path: { deployment_id: deploymentId } },
        }),
      ),
    [deploymentId, changes],
  );
  if (list.error) return <ErrorBox error={list.error} />;
  const health = list.data?.health;
  if (!list.data) return <p class="muted">Loading…</p>;
  if (!health) return <p class="muted">The listener has not reported pods yet.</p>;
  return (
    <div>
      {health.unhealthy_since ? (
        <div class="error" data-testid="unhealthy">
          Unhealthy since {new Date(health.unhealthy_since).toLocaleString()}:{" "}
          {health.reason ?? health.unhealthy_reason}
        </div>
      ) : (
        <p class="muted" data-testid="serving">
          {health.serving ? "Serving" : `Not serving yet: ${health.reason ?? "no API pod is ready"}`}{" "}
          (reported {new Date(health.reported_at).toLocaleTimeString()})
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Pod</th>
            <th>Type</th>
            <th>Revision</th>
            <th>State</th>
            <th>Restarts</th>
            <th>Reason</th>
          </tr>
        </thead>
        <tbody>
          {list.data.resources.map((p) => (
            <tr data-pod={p.id}>
              <td>
                <code>{p.id}</code>
              </td>
              <td>{p.type}</td>
              <td>
                <code>{p.revision_id.slice(0, 8)}</code>
              </td>
              <td>{p.state}</td>
              <td>{p.restarts}</td>
              <td>{p.reason ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
