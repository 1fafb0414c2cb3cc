import { Counter, Histogram, type MetricType, type Registry } from "prom-client";
import {
  type EdgeTotals,
  edgeTotals,
  LATENCY_BOUNDS_MS,
  STATUS_CLASSES,
} from "../runtimes/local/routing/request-metrics.ts";

/**
 * The apps edge's per-deployment metrics in `/metrics` (SLIPWAY_METRICS_PER_DEPLOYMENT=true; the
 * route then needs a system key: deployment names are tenants' data). Read from the router's totals
 * at scrape time, so the edge's hot path only counts (request-metrics.ts).
 */

const HELP = "Apps edge: latency of proxied requests by deployment.";
/** prom-client declares MetricType as an enum of strings but exports no value of it at run time. */
const HISTOGRAM = "histogram" as unknown as MetricType;

/** prom-client's histogram with its values taken from pre-counted totals instead of observations. */
class CountedHistogram extends Histogram<"deployment"> {
  constructor(
    registry: Registry,
    private readonly totals: () => ReadonlyMap<string, EdgeTotals>,
  ) {
    super({
      name: "slipway_edge_request_duration_seconds",
      help: HELP,
      labelNames: ["deployment"],
      buckets: LATENCY_BOUNDS_MS.map((ms) => ms / 1000),
      registers: [registry],
    });
  }

  override get(): ReturnType<Histogram<"deployment">["get"]> {
    return this.counted();
  }

  /** What the registry's text format reads (prom-client calls it instead of `get` when present). */
  getForPromString() {
    return this.counted();
  }

  private async counted(): ReturnType<Histogram<"deployment">["get"]> {
    const name = "slipway_edge_request_duration_seconds";
    const values: { value: number; labels: Record<string, string | number>; metricName: string }[] = [];
    for (const [deployment, t] of this.totals()) {
      let cumulative = 0;
      LATENCY_BOUNDS_MS.forEach((ms, i) => {
        cumulative += t.latency[i] ?? 0;
        values.push({
          metricName: `${name}_bucket`,
          labels: { deployment, le: ms / 1000 },
          value: cumulative,
        });
      });
      values.push({ metricName: `${name}_bucket`, labels: { deployment, le: "+Inf" }, value: t.requests });
      values.push({ metricName: `${name}_sum`, labels: { deployment }, value: t.latencySumMs / 1000 });
      values.push({ metricName: `${name}_count`, labels: { deployment }, value: t.requests });
    }
    // `collect` is the base class's (none set): the values are computed here, at scrape time.
    return {
      name,
      help: HELP,
      type: HISTOGRAM,
      values,
      aggregator: "sum",
      collect: () => {},
    };
  }
}

export function registerEdgeMetrics(registry: Registry, totals = edgeTotals): void {
  new Counter({
    name: "slipway_edge_requests_total",
    help: "Apps edge: proxied requests by deployment and status class.",
    labelNames: ["deployment", "code_class"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [deployment, t] of totals()) {
        STATUS_CLASSES.forEach((code_class, i) => {
          const n = t.classes[i] ?? 0;
          if (n > 0) this.inc({ deployment, code_class }, n);
        });
      }
    },
  });
  new CountedHistogram(registry, totals);
}
