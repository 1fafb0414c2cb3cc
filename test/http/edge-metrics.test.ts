import assert from "node:assert/strict";
import { it } from "node:test";
import { recordRequest } from "../../src/runtimes/local/routing/request-metrics.ts";
import { forEachDatabase } from "../helpers/harness.ts";

// The counts come from the edge's recorder (the serving suite, test/resources/domains, drives the
// real edge); here what /metrics shows of them, and who may read it.
const name = `edge-metrics-${process.pid}`;

forEachDatabase(
  "/metrics with SLIPWAY_METRICS_PER_DEPLOYMENT=true",
  (suite) => {
    it("needs a system key: none → 401, an organization's admin → 403", async () => {
      const { app, keys } = suite.ctx;
      assert.equal((await app.inject({ method: "GET", url: "/metrics" })).statusCode, 401);
      for (const key of [keys.admin, keys.member, keys.viewer]) {
        const res = await app.inject({ method: "GET", url: "/metrics", headers: { "x-api-key": key } });
        assert.equal(res.statusCode, 403, res.body);
      }
      const other = suite.ctx.other.admin;
      assert.equal(
        (await app.inject({ method: "GET", url: "/metrics", headers: { "x-api-key": other } })).statusCode,
        403,
      );
    });

    it("shows each deployment's requests by status class and its latency histogram", async () => {
      const { app, keys } = suite.ctx;
      recordRequest(name, 3, 200);
      recordRequest(name, 40, 200);
      recordRequest(name, 40, 404);
      const res = await app.inject({ method: "GET", url: "/metrics", headers: { "x-api-key": keys.system } });
      assert.equal(res.statusCode, 200);
      const lines = res.body.split("\n").filter((l) => l.includes(`deployment="${name}"`));
      const value = (prefix: string) => {
        const line = lines.find((l) => l.startsWith(prefix));
        assert.ok(line, `${prefix} in:\n${lines.join("\n")}`);
        return Number(line.split(" ").at(-1));
      };
      assert.ok(value(`slipway_edge_requests_total{deployment="${name}",code_class="2xx"}`) >= 2);
      assert.ok(value(`slipway_edge_requests_total{deployment="${name}",code_class="4xx"}`) >= 1);
      const count = value(`slipway_edge_request_duration_seconds_count{deployment="${name}"}`);
      assert.ok(count >= 3);
      assert.equal(
        value(`slipway_edge_request_duration_seconds_bucket{deployment="${name}",le="+Inf"}`),
        count,
      );
      const under5ms = value(`slipway_edge_request_duration_seconds_bucket{deployment="${name}",le="0.005"}`);
      const under50ms = value(`slipway_edge_request_duration_seconds_bucket{deployment="${name}",le="0.05"}`);
      assert.ok(under5ms >= 1 && under50ms >= under5ms + 2, `${under5ms} ${under50ms}`);
      assert.match(res.body, /# TYPE slipway_edge_request_duration_seconds histogram/);
      // The API's own metrics are still there.
      assert.match(res.body, /slipway_http_requests_total\{/);
    });
  },
  { env: { SLIPWAY_METRICS_PER_DEPLOYMENT: "true" } },
);

forEachDatabase("/metrics without SLIPWAY_METRICS_PER_DEPLOYMENT", (suite) => {
  it("stays public and names no deployment", async () => {
    recordRequest(name, 3, 200);
    const res = await suite.ctx.app.inject({ method: "GET", url: "/metrics" });
    assert.equal(res.statusCode, 200);
    assert.doesNotMatch(res.body, /slipway_edge_/);
    assert.ok(!res.body.includes(name));
  });
});
