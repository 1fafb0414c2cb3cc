import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { type RunningReconciler, startReconciler } from "../../../src/wiring/reconciler.ts";
import { appGet, freePort } from "../../e2e/stack.ts";
import { call, type Deployment } from "../../helpers/deployments.ts";
import { startDnsServer } from "../../helpers/dns-challtestsrv.ts";
import { eventually } from "../../helpers/eventually.ts";
import { forEachDatabase } from "../../helpers/harness.ts";
import { waitForRevision } from "../../helpers/wait.ts";

interface Domain {
  id: string;
  hostname: string;
  verification: { status: string; record_name: string; token: string };
}

// The whole path: the API, the checker against a real DNS server, the edge of `slipway serve`.
const dns = await startDnsServer();
after(() => dns.stop());
const appsPort = await freePort();

forEachDatabase(
  "a verified custom domain is served by the apps edge",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    before(async () => {
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
    });
    after(async () => {
      await stack?.stop();
    });

    it("routes the hostname to its deployment once verified, and stops when it is removed", async () => {
      const ctx = suite.ctx;
      const created = await call<Deployment>(ctx, "POST", "/v2/deployments", {
        name: `edge-${kind}`,
        source: "internal_template",
        source_revision_config: { repo_ref: "hello-http" },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const dep = created.body;
      assert.ok(dep.latest_revision_id);
      assert.equal(await waitForRevision(ctx.db, dep.latest_revision_id, { timeoutMs: 120_000 }), "DEPLOYED");

      const host = `shop.${kind}.example.com`;
      const custom = `http://${host}:${appsPort}`;
      // Not a domain yet: the edge does not know the host.
      assert.equal((await appGet(custom)).status, 404);

      const added = await call<Domain>(ctx, "POST", `/v2/deployments/${dep.id}/domains`, { hostname: host });
      assert.equal(added.status, 201);
      // Pending: still not served.
      assert.equal((await appGet(custom)).status, 404);

      await dns.setTxt(added.body.verification.record_name, added.body.verification.token);
      await eventually(
        "the domain to be verified and served",
        async () => (await appGet(custom)).status === 200,
        30_000,
      );
      const own = (await call<Deployment>(ctx, "GET", `/v2/deployments/${dep.id}`)).body;
      assert.equal(own.source_config.custom_url, custom);
      // A new revision keeps the verified domain as custom_url.
      const patched = await call<Deployment>(ctx, "PATCH", `/v2/deployments/${dep.id}`, {
        source_revision_config: { repo_ref: "hello-http" },
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      const next = patched.body.latest_revision_id;
      assert.ok(next && next !== dep.latest_revision_id, "a new revision");
      assert.equal(await waitForRevision(ctx.db, next, { timeoutMs: 120_000 }), "DEPLOYED");
      const redeployed = (await call<Deployment>(ctx, "GET", `/v2/deployments/${dep.id}`)).body;
      assert.equal(redeployed.active_revision_id, next);
      assert.equal(redeployed.source_config.custom_url, custom);
      assert.equal((await appGet(custom)).status, 200);
      // The edge counted those requests for the deployment: its metrics route and /metrics agree.
      // (Behind HAProxy a request is counted when its log line arrives, a moment after its answer.)
      const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
      const metrics = await eventually(
        "the requests counted",
        async () => {
          const got = await call<{
            points: { requests: number; statuses: Record<string, number> }[];
            latency_histogram: { bounds_ms: number[]; counts: number[] };
          }>(ctx, "GET", `/v2/deployments/${dep.id}/metrics?window=15m`);
          assert.equal(got.status, 200);
          return sum(got.body.points.map((p) => p.requests)) >= 2 ? got : undefined;
        },
        10_000,
      );
      const requests = sum(metrics.body.points.map((p) => p.requests));
      assert.equal(sum(metrics.body.points.map((p) => p.statuses["2xx"] ?? 0)), requests);
      assert.equal(sum(metrics.body.latency_histogram.counts), requests);
      const scrape = await ctx.app.inject({
        method: "GET",
        url: "/metrics",
        headers: { "x-api-key": ctx.keys.system },
      });
      assert.equal(scrape.statusCode, 200);
      const line = scrape.body
        .split("\n")
        .find((l) => l.startsWith(`slipway_edge_requests_total{deployment="${dep.name}",code_class="2xx"}`));
      assert.ok(line, "the deployment's 2xx counter");
      assert.ok(Number(line.split(" ").at(-1)) >= requests);
      // The apps domain keeps serving it too.
      assert.equal((await appGet(`http://${dep.name}.${ctx.config.apps.domain}:${appsPort}`)).status, 200);

      const removed = await call(ctx, "DELETE", `/v2/deployments/${dep.id}/domains/${added.body.id}`);
      assert.equal(removed.status, 200);
      await eventually(
        "the edge to stop serving it",
        async () => (await appGet(custom)).status === 404,
        30_000,
      );
      const unserved = (await call<Deployment>(ctx, "GET", `/v2/deployments/${dep.id}`)).body;
      assert.equal(
        unserved.source_config.custom_url,
        `http://${dep.name}.${ctx.config.apps.domain}:${appsPort}`,
      );
    });
  },
  {
    env: {
      SLIPWAY_RECONCILER: "true",
      SLIPWAY_RECONCILER_POLL_MS: "200",
      SLIPWAY_APPS_PORT: String(appsPort),
      SLIPWAY_HEALTH_TIMEOUT_MS: "5000",
      SLIPWAY_DNS_RESOLVER: dns.address,
      SLIPWAY_DOMAIN_CHECK_MS: "200",
      SLIPWAY_METRICS_PER_DEPLOYMENT: "true",
    },
  },
);
