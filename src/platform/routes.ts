import { Type } from "@sinclair/typebox";
import type { Registry } from "prom-client";
import { unavailable } from "../core/errors.ts";
import type { App } from "../http/types.ts";

/**
 * Health, metrics and the OpenAPI document: no API key, so probes and tools can reach them (but
 * `/metrics` with SLIPWAY_METRICS_PER_DEPLOYMENT, which needs a system key).
 */
export async function platformRoutes(app: App, opts: { metrics: Registry }): Promise<void> {
  app.get(
    "/ok",
    {
      config: { auth: { public: true } },
      schema: {
        tags: ["platform"],
        summary: "Liveness and database reachability",
        response: { 200: Type.Object({ ok: Type.Boolean() }), 503: Type.Object({ detail: Type.String() }) },
      },
    },
    async () => {
      try {
        await app.deps.db.ping();
      } catch {
        throw unavailable("Database is unreachable.");
      }
      return { ok: true };
    },
  );

  // Per-deployment metrics name tenants' deployments: then only system keys may scrape.
  const metricsAuth = app.deps.config.metricsPerDeployment ? { system: true } : { public: true };
  app.get("/metrics", { config: { auth: metricsAuth }, schema: { hide: true } }, async (_request, reply) => {
    reply.header("content-type", opts.metrics.contentType);
    return opts.metrics.metrics();
  });

  app.get("/openapi.json", { config: { auth: { public: true } }, schema: { hide: true } }, async () =>
    app.swagger(),
  );
}
