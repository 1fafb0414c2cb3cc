// GET /v2/deployments/{id}/metrics: the console's charts, from what this process's apps router
// counted (src/runtimes/local/routing/request-metrics.ts).
import { type TInteger, Type } from "@sinclair/typebox";
import { peekDeployment } from "../../core/deployments/read-store.ts";
import { notFound } from "../../core/errors.ts";
import { DeploymentParams, StringEnum } from "../../core/shapes.ts";
import { workspaceOf } from "../../http/auth.ts";
import { ErrorBody } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import {
  BUCKET_MS,
  latencyHistogram,
  STATUS_CLASSES,
  type StatusClass,
  trafficSeries,
} from "../../runtimes/local/routing/request-metrics.ts";

const WINDOWS = { "15m": 15, "1h": 60, "6h": 360, "24h": 1440 } as const;
type Window = keyof typeof WINDOWS;

const Point = Type.Object({
  at: Type.String({ format: "date-time" }),
  requests: Type.Integer(),
  errors: Type.Integer({ description: "Answers with status 500 or more." }),
  latency_avg_ms: Type.Union([Type.Number(), Type.Null()]),
  latency_max_ms: Type.Union([Type.Number(), Type.Null()]),
  restarts: Type.Integer({ description: "Process restarts after a crash." }),
  statuses: Type.Object(
    Object.fromEntries(STATUS_CLASSES.map((c) => [c, Type.Integer()])) as Record<StatusClass, TInteger>,
    { description: "Answers by status class." },
  ),
});

const LatencyHistogram = Type.Object(
  {
    bounds_ms: Type.Array(Type.Number()),
    counts: Type.Array(Type.Integer()),
  },
  {
    description:
      "Requests of the window by latency: counts[i] took at most bounds_ms[i] (and more than the bound before); the last count, more than every bound.",
  },
);

const Metrics = Type.Object({
  deployment_id: Type.String({ format: "uuid" }),
  window: Type.String(),
  bucket_seconds: Type.Integer(),
  points: Type.Array(Point),
  latency_histogram: LatencyHistogram,
});

export async function deploymentMetricsRoutes(app: App): Promise<void> {
  app.get(
    "/v2/deployments/:deployment_id/metrics",
    {
      schema: {
        tags: ["deployments"],
        summary: "Request rate, status classes, latency and restarts of a deployment's app, per minute",
        description:
          "Counted by the apps router of the serving process since it started (kept 24 hours): one point " +
          "a minute over `window`, oldest first, empty minutes as zeros.",
        params: DeploymentParams,
        querystring: Type.Object({ window: Type.Optional(StringEnum(["15m", "1h", "6h", "24h"] as const)) }),
        response: { 200: Metrics, 404: ErrorBody },
      },
    },
    async (request) => {
      const dep = await peekDeployment(
        app.deps.db,
        workspaceOf(request).workspaceId,
        request.params.deployment_id,
      );
      if (!dep) throw notFound("Deployment not found.");
      const window: Window = request.query.window ?? "1h";
      // One instant for both, so the histogram covers the points' minutes.
      const now = Date.now();
      return {
        deployment_id: dep.id,
        window,
        bucket_seconds: BUCKET_MS / 1000,
        points: trafficSeries(dep.name, WINDOWS[window] * 60_000, now),
        latency_histogram: latencyHistogram(dep.name, WINDOWS[window] * 60_000, now),
      };
    },
  );
}
