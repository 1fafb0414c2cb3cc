// Per-minute line charts of a deployment's traffic, drawn as SVG (no inline script or style needed).
import { unwrap } from "../../sdk/client.ts";
import type { Session } from "./session.ts";
import { ErrorBox, useLoad } from "./ui.tsx";

interface Series {
  title: string;
  values: (number | null)[];
  unit: string;
}

function Chart({ title, values, unit }: Series) {
  const w = 300;
  const h = 80;
  const nums = values.map((v) => v ?? 0);
  const max = Math.max(1, ...nums);
  const step = nums.length > 1 ? w / (nums.length - 1) : w;
  const points = nums
    .map((v, i) => `${(i * step).toFixed(1)},${(h - (v / max) * (h - 4)).toFixed(1)}`)
    .join(" ");
  const last = values.filter((v) => v !== null).at(-1) ?? 0;
  return (
    <figure class="chart">
      <figcaption>
        {title}: <strong>{last}</strong> {unit} <span class="muted">(max {max})</span>
      </figcaption>
      <svg viewBox={`0 0 ${w} ${h}`} role="img" aria-label={title}>
        <polyline points={points} fill="none" stroke="currentColor" stroke-width="1.5" />
      </svg>
    </figure>
  );
}

export function Metrics({ session, deploymentId }: { session: Session; deploymentId: string }) {
  const { data, error } = useLoad(
    () =>
      unwrap(
        session.client.api.GET("/v2/deployments/{deployment_id}/metrics", {
          params: { path: { deployment_id: deploymentId }, query: { window: "1h" } },
        }),
      ),
    [deploymentId],
  );
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p class="muted">Loading metrics…</p>;
  const p = data.points;
  const classes = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;
  const byClass = classes.map((c) => [c, p.reduce((n, x) => n + x.statuses[c], 0)] as const);
  return (
    <div>
      <div class="charts">
        <Chart title="Requests per minute" values={p.map((x) => x.requests)} unit="req/min" />
        <Chart title="Average latency" values={p.map((x) => x.latency_avg_ms)} unit="ms" />
        <Chart title="Restarts" values={p.map((x) => x.restarts)} unit="per min" />
      </div>
      <p class="muted" data-statuses>
        By status:{" "}
        {byClass
          .filter(([c, n]) => n > 0 || c === "2xx")
          .map(([c, n]) => `${c} ${n}`)
          .join(" · ")}
      </p>
    </div>
  );
}
