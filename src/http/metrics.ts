import type { FastifyInstance } from "fastify";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Database } from "../db/client.ts";

/** One registry per app, so tests can build many apps in one process. */
export function registerMetrics(app: FastifyInstance, db: Database): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "slipway_" });
  const labelNames = ["method", "route", "status_code"] as const;
  const requests = new Counter({
    name: "slipway_http_requests_total",
    help: "HTTP requests by route and status.",
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "slipway_http_request_duration_seconds",
    help: "HTTP request latency by route and status.",
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const pool = new Gauge({
    name: "slipway_db_pool_connections",
    help: "Database pool connections by state (total, idle, waiting).",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      const s = db.stats();
      this.set({ state: "total" }, s.total);
      this.set({ state: "idle" }, s.idle);
      this.set({ state: "waiting" }, s.waiting);
    },
  });
  void pool;
  // The read cache is decorated after this (app.ts): both are read at scrape time.
  const cacheSize = new Gauge({
    name: "slipway_read_cache_size",
    help: "What the read cache of GET answers holds: entries and bytes.",
    labelNames: ["what"] as const,
    registers: [registry],
    collect() {
      if (!app.hasDecorator("reads")) return;
      const { entries, bytes } = app.reads.size;
      this.set({ what: "entries" }, entries);
      this.set({ what: "bytes" }, bytes);
    },
  });
  const cacheReads = new Counter({
    name: "slipway_read_cache_reads_total",
    help: "Cacheable reads answered from memory (hit) and from the database (miss).",
    labelNames: ["result"] as const,
    registers: [registry],
    collect() {
      if (!app.hasDecorator("reads")) return;
      const { hits, misses } = app.reads.counts;
      this.reset();
      this.inc({ result: "hit" }, hits);
      this.inc({ result: "miss" }, misses);
    },
  });
  void cacheSize;
  void cacheReads;
  app.addHook("onResponse", (request, reply, done) => {
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? "unmatched",
      status_code: String(reply.statusCode),
    };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    done();
  });
  return registry;
}
