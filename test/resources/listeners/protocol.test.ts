import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { call, createDocker, locs } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";
import {
  deployedOn,
  deployment,
  poll,
  pollUntil,
  registerListener,
  report,
  revision,
  runReconciler,
} from "../../helpers/listener-agent.ts";
import { until } from "../../helpers/reconciler.ts";
import { waitForRevision } from "../../helpers/wait.ts";

/**
 * The listener protocol end to end on the control plane: the test plays the listener with real
 * HTTP calls on its own key (desired long-polls, status reports) against the API and a running
 * reconciler, and reads the revisions' and deployments' statuses as a user would.
 */

forEachDatabase(
  "listener protocol",
  (suite) => {
    runReconciler(suite);

    it("deploy: desired lists the revision with its decrypted env; available → DEPLOYED; PATCH → new rollout", async () => {
      const ctx = suite.ctx;
      const agent = await registerListener(ctx);
      const first = await poll(ctx, agent, 0);
      assert.deepEqual(first.deployments, []);
      const d = await createDocker(ctx, {
        source_config: {
          listener_id: agent.id,
          listener_config: { k8s_namespace: "apps" },
          resource_spec: { min_scale: 2, cpu: 0.5, labels: { team: "a" } },
        },
        source_revision_config: { image_uri: "registry.example/app:1.4" },
        secrets: [{ name: "API_TOKEN", value: "s3cret" }],
        secret_references: [{ name: "DB_PASSWORD", secret_name: "db", secret_key: "password" }],
      });
      const r1 = String(d.latest_revision_id);
      const { entry } = await pollUntil(ctx, agent, d.id, r1);
      assert.ok(entry);
      assert.equal(entry.name, d.name);
      assert.equal(entry.namespace, "apps");
      assert.equal(entry.image, "registry.example/app:1.4");
      assert.deepEqual(entry.env, { API_TOKEN: "s3cret", PORT: "8080" });
      assert.deepEqual(entry.secret_references, [
        { name: "DB_PASSWORD", secret_name: "db", key: "password" },
      ]);
      assert.deepEqual(entry.resource_spec, { min_scale: 2, cpu: 0.5, cpu_limit: 1, labels: { team: "a" } });
      assert.equal(entry.port, 8080);
      assert.equal(entry.host, `${d.name}.${ctx.config.apps.domain}`);
      assert.equal((await revision(ctx, d.id, r1)).status, "DEPLOYING");

      assert.equal((await report(ctx, agent, [{ revision_id: r1, state: "progressing" }])).status, 204);
      assert.equal((await revision(ctx, d.id, r1)).status, "DEPLOYING");
      assert.equal((await report(ctx, agent, [{ revision_id: r1, state: "available" }])).status, 204);
      assert.equal(await waitForRevision(ctx.db, r1), "DEPLOYED");
      const served = await deployment(ctx, d.id);
      assert.equal(served.active_revision_id, r1);
      assert.equal(served.status, "READY");
      assert.equal(served.source_config.custom_url, `http://${d.name}.${ctx.config.apps.domain}`);
      const listener = await call<{ status: string; last_seen_at: string | null }>(
        ctx,
        "GET",
        `/v2/listeners/${agent.id}`,
      );
      assert.equal(listener.body.status, "CONNECTED");
      assert.ok(listener.body.last_seen_at);

      // Nothing changed: a poll with the current version waits, then answers the same version.
      const same = await poll(ctx, agent, 1);
      assert.equal(same.deployments.find((x) => x.deployment_id === d.id)?.revision_id, r1);

      const patched = await call<{ latest_revision_id: string }>(ctx, "PATCH", `/v2/deployments/${d.id}`, {
        source_revision_config: { image_uri: "registry.example/app:1.5" },
      });
      const r2 = patched.body.latest_revision_id;
      const next = await pollUntil(ctx, agent, d.id, r2);
      assert.equal(next.entry?.image, "registry.example/app:1.5");
      await report(ctx, agent, [{ revision_id: r2, state: "available" }]);
      assert.equal(await waitForRevision(ctx.db, r2), "DEPLOYED");
      assert.equal((await deployment(ctx, d.id)).active_revision_id, r2);
    });

    it("a failed rollout → DEPLOY_FAILED with the reason; the old revision is desired again and stays active", async () => {
      const ctx = suite.ctx;
      const agent = await registerListener(ctx);
      const { d, r1 } = await deployedOn(ctx, agent);
      const patched = await call<{ latest_revision_id: string }>(ctx, "PATCH", `/v2/deployments/${d.id}`, {
        source_revision_config: { image_uri: "registry.example/broken:2" },
      });
      const r2 = patched.body.latest_revision_id;
      await pollUntil(ctx, agent, d.id, r2);
      await report(ctx, agent, [
        { revision_id: r2, state: "failed", reason: "ProgressDeadlineExceeded: ImagePullBackOff" },
      ]);
      assert.equal(await waitForRevision(ctx.db, r2), "DEPLOY_FAILED");
      const failed = await revision(ctx, d.id, r2);
      assert.match(String(failed.status_message), /ProgressDeadlineExceeded: ImagePullBackOff/);
      await pollUntil(ctx, agent, d.id, r1);
      assert.equal((await deployment(ctx, d.id)).active_revision_id, r1);
    });

    it("interrupt a rollout → INTERRUPTED, the old revision is desired again; redeploy rolls it out anew", async () => {
      const ctx = suite.ctx;
      const agent = await registerListener(ctx);
      const { d, r1 } = await deployedOn(ctx, agent);
      const patched = await call<{ latest_revision_id: string }>(ctx, "PATCH", `/v2/deployments/${d.id}`, {
        source_revision_config: { image_uri: "registry.example/app:3" },
      });
      const r2 = patched.body.latest_revision_id;
      await pollUntil(ctx, agent, d.id, r2);
      const stop = await call(ctx, "POST", `/v2/deployments/${d.id}/revisions/${r2}/interrupt`);
      assert.equal(stop.status, 200, JSON.stringify(stop.body));
      assert.equal(await waitForRevision(ctx.db, r2), "INTERRUPTED");
      await pollUntil(ctx, agent, d.id, r1);
      const again = await call<{ latest_revision_id: string }>(
        ctx,
        "POST",
        `/v2/deployments/${d.id}/revisions/${r2}/redeploy`,
      );
      assert.equal(again.status, 200, JSON.stringify(again.body));
      const r3 = again.body.latest_revision_id;
      const { entry } = await pollUntil(ctx, agent, d.id, r3);
      assert.equal(entry?.image, "registry.example/app:3");
      await report(ctx, agent, [{ revision_id: r3, state: "available" }]);
      assert.equal(await waitForRevision(ctx.db, r3), "DEPLOYED");
    });

    it("delete: the deployment leaves the desired state and is removed", async () => {
      const ctx = suite.ctx;
      const agent = await registerListener(ctx);
      const { d } = await deployedOn(ctx, agent);
      assert.equal((await call(ctx, "DELETE", `/v2/deployments/${d.id}`)).status, 204);
      await pollUntil(ctx, agent, d.id, null);
      await until("the deployment is removed", async () =>
        (await call(ctx, "GET", `/v2/deployments/${d.id}`)).status === 404 ? true : undefined,
      );
      assert.equal(
        (await call(ctx, "DELETE", `/v2/listeners/${agent.id}`, undefined, { key: ctx.keys.admin })).status,
        204,
      );
    });

    it("status: unknown state or another listener's revision → 422 and nothing recorded; [] is a heartbeat", async () => {
      const ctx = suite.ctx;
      const agent = await registerListener(ctx);
      const d = await createDocker(ctx, {
        source_config: { listener_id: agent.id, listener_config: { k8s_namespace: "apps" } },
      });
      const r1 = String(d.latest_revision_id);
      await pollUntil(ctx, agent, d.id, r1);
      assert.deepEqual(locs(await report(ctx, agent, [{ revision_id: r1, state: "running" }])), [
        "body.revisions.0.state",
      ]);
      const local = await createDocker(ctx);
      const mixed = await report(ctx, agent, [
        { revision_id: r1, state: "available" },
        { revision_id: local.latest_revision_id, state: "failed" },
      ]);
      assert.deepEqual(locs(mixed), ["body.revisions.1.revision_id"]);
      assert.equal((await revision(ctx, d.id, r1)).status, "DEPLOYING");
      assert.equal((await report(ctx, agent, [])).status, 204);
      assert.deepEqual(
        locs(
          await call(ctx, "GET", `/v2/listeners/${agent.id}/desired?wait=61`, undefined, { key: agent.key }),
        ),
        ["query.wait"],
      );
    });
  },
  { env: { SLIPWAY_APPS_DOMAIN: "apps.example.com" } },
);

forEachDatabase(
  "listener timeout",
  (suite) => {
    runReconciler(suite);

    it("a silent listener → DISCONNECTED and its deployments UNKNOWN; a report → CONNECTED and READY", async () => {
      const ctx = suite.ctx;
      const agent = await registerListener(ctx);
      const { d, r1 } = await deployedOn(ctx, agent);
      await until("the deployment turns UNKNOWN", async () =>
        (await deployment(ctx, d.id)).status === "UNKNOWN" ? true : undefined,
      );
      const silent = await call<{ status: string }>(ctx, "GET", `/v2/listeners/${agent.id}`);
      assert.equal(silent.body.status, "DISCONNECTED");
      assert.equal((await report(ctx, agent, [])).status, 204);
      await until("the deployment is READY again", async () =>
        (await deployment(ctx, d.id)).status === "READY" ? true : undefined,
      );
      assert.equal((await revision(ctx, d.id, r1)).status, "DEPLOYED");
    });

    it("a poll its listener left is not hearing from it: a stopped listener stays DISCONNECTED", async () => {
      const ctx = suite.ctx;
      const agent = await registerListener(ctx);
      await poll(ctx, agent, 0);
      await ctx.app.listen({ port: 0, host: "127.0.0.1" });
      const { port } = ctx.app.server.address() as AddressInfo;
      const left = new AbortController();
      const started = Date.now();
      const polling = fetch(
        `http://127.0.0.1:${port}/v2/listeners/${agent.id}/desired?after=${agent.version}&wait=1`,
        { headers: { "x-api-key": agent.key }, signal: left.signal },
      );
      await sleep(200);
      left.abort();
      await assert.rejects(polling);
      const seen = async () =>
        (await call<{ status: string; last_seen_at: string }>(ctx, "GET", `/v2/listeners/${agent.id}`)).body;
      const atLeave = (await seen()).last_seen_at;
      // Past the poll's end (1 s after it began), where it used to count as hearing from the listener.
      await sleep(Math.max(0, started + 1500 - Date.now()));
      const later = await seen();
      assert.equal(later.last_seen_at, atLeave);
      assert.equal(later.status, "DISCONNECTED");
    });
  },
  { env: { SLIPWAY_LISTENER_TIMEOUT_S: "1" } },
);
