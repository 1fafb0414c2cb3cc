import assert from "node:assert/strict";
import { before, it } from "node:test";
import { sql } from "drizzle-orm";
import { rows } from "../../../src/db/client.ts";
import type { DeploymentPodsReport, PodReport } from "../../../src/protocol/listener.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { call, createDocker, type Deployment, locs } from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import {
  type Agent,
  deployedOn,
  poll,
  pollUntil,
  registerListener,
  report,
  runReconciler,
} from "../../helpers/listener-agent.ts";
import { waitForRevision } from "../../helpers/wait.ts";

/**
 * Pods reports in POST /v2/listeners/{id}/status (issue 29, "after rollout"): stored per
 * deployment, listed by GET /v2/deployments/{id}/processes in the local processes' shape, and
 * deployment.unhealthy / deployment.healthy once per transition of the active revision's serving.
 * The test plays the listener over HTTP on its own key.
 */

interface Processes {
  resources: Record<string, unknown>[];
  health?: Record<string, unknown> | null;
}

const STARTED = "2026-11-27T10:00:00.000Z";
const CRASH =
  "CrashLoopBackOff in container app (last exit 1, Error): back-off 40s restarting failed container=app";

const pod = (revision: string, name: string, over: Partial<PodReport> = {}): PodReport => ({
  name,
  revision_id: revision,
  component: "api",
  state: "ready",
  restarts: 0,
  started_at: STARTED,
  ...over,
});

function pods(d: string, revision: string, list: PodReport[], reason?: string): DeploymentPodsReport {
  const serving = list.some(
    (p) => p.revision_id === revision && p.component === "api" && p.state === "ready",
  );
  return { deployment_id: d, revision_id: revision, serving, ...(reason ? { reason } : {}), pods: list };
}

async function healthEvents(ctx: TestContext, deploymentId: string) {
  const found = await rows<{ type: string; body: string }>(
    ctx.db.orm,
    sql`SELECT type, body FROM events WHERE type IN ('deployment.unhealthy', 'deployment.healthy') ORDER BY pk`,
  );
  return found
    .map((r) => ({ type: r.type, data: (JSON.parse(r.body) as { data: Record<string, unknown> }).data }))
    .filter((e) => e.data.deployment_id === deploymentId);
}

forEachDatabase("listener pods reports", (suite) => {
  runReconciler(suite);
  let agent: Agent;
  let d: Deployment;
  let r1: string;
  let other: Deployment;

  before(async () => {
    const ctx = suite.ctx;
    agent = await registerListener(ctx);
    ({ d, r1 } = await deployedOn(ctx, agent));
    // Another organization's deployment on its own listener, with pods reported.
    const away = await registerListener(ctx, ctx.other.admin);
    other = await createDocker(
      ctx,
      { source_config: { listener_id: away.id, listener_config: { k8s_namespace: "apps" } } },
      { key: ctx.other.admin },
    );
    const otherRev = String(other.latest_revision_id);
    await pollUntil(ctx, away, other.id, otherRev);
    const sent = await report(ctx, away, [], [pods(other.id, otherRev, [pod(otherRev, "away-1")])]);
    assert.equal(sent.status, 204, JSON.stringify(sent.body));
  });

  authMatrix(suite, {
    method: "GET",
    url: () => `/v2/deployments/${d.id}/processes`,
    workspace: true,
    otherTenantUrl: () => `/v2/deployments/${other.id}/processes`,
    // The same organization's other workspace: a key bound to it does not see this deployment.
    otherWorkspaceUrl: () => `/v2/deployments/${d.id}/processes`,
  });

  it("the desired state says the server takes pods reports", async () => {
    assert.equal((await poll(suite.ctx, agent, 0)).pod_reports, true);
  });

  it("before any pods report: no processes, health null", async () => {
    const ctx = suite.ctx;
    const fresh = await createDocker(ctx, {
      source_config: { listener_id: agent.id, listener_config: { k8s_namespace: "apps" } },
    });
    const res = await call<Processes>(ctx, "GET", `/v2/deployments/${fresh.id}/processes`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { resources: [], health: null });
  });

  it("pods in the processes' shape: state mapped, reason kept, memory unknown; a viewer reads them", async () => {
    const ctx = suite.ctx;
    const list = [
      pod(r1, `${d.name}-abc-1`),
      pod(r1, `${d.name}-abc-0`, { state: "crash_looping", restarts: 4, reason: CRASH }),
      pod(r1, `${d.name}-queue-abc-0`, {
        component: "queue",
        state: "starting",
        restarts: 0,
        started_at: undefined,
        reason: "ImagePullBackOff in container worker: Back-off pulling image",
      }),
      pod(r1, `${d.name}-queue`, {
        component: "queue",
        state: "refused",
        restarts: 0,
        started_at: undefined,
        reason: "FailedCreate: exceeded quota: apps-quota",
      }),
    ];
    const sent = await report(ctx, agent, [], [pods(d.id, r1, list)]);
    assert.equal(sent.status, 204, JSON.stringify(sent.body));
    const res = await call<Processes>(ctx, "GET", `/v2/deployments/${d.id}/processes`, undefined, {
      key: ctx.keys.viewer,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.resources, [
      {
        type: "api",
        index: 1,
        id: `${d.name}-abc-0`,
        revision_id: r1,
        state: "restarting",
        restarts: 4,
        started_at: STARTED,
        memory_bytes: null,
        reason: CRASH,
      },
      {
        type: "api",
        index: 2,
        id: `${d.name}-abc-1`,
        revision_id: r1,
        state: "running",
        restarts: 0,
        started_at: STARTED,
        memory_bytes: null,
        reason: null,
      },
      {
        type: "queue",
        index: 1,
        id: `${d.name}-queue`,
        revision_id: r1,
        state: "stopped",
        restarts: 0,
        started_at: null,
        memory_bytes: null,
        reason: "FailedCreate: exceeded quota: apps-quota",
      },
      {
        type: "queue",
        index: 2,
        id: `${d.name}-queue-abc-0`,
        revision_id: r1,
        state: "starting",
        restarts: 0,
        started_at: null,
        memory_bytes: null,
        reason: "ImagePullBackOff in container worker: Back-off pulling image",
      },
    ]);
    assert.equal(res.body.health?.serving, true);
    assert.equal(res.body.health?.unhealthy_since, null);
    assert.equal(typeof res.body.health?.reported_at, "string");
  });

  it("the active revision stops serving: deployment.unhealthy once with the reason, deployment.healthy when it serves again", async () => {
    const ctx = suite.ctx;
    const crashing = [pod(r1, `${d.name}-abc-0`, { state: "crash_looping", restarts: 5, reason: CRASH })];
    const why = `${d.name}-abc-0: ${CRASH}`;
    for (let i = 0; i < 2; i++) {
      const sent = await report(ctx, agent, [], [pods(d.id, r1, crashing, why)]);
      assert.equal(sent.status, 204, JSON.stringify(sent.body));
    }
    let events = await healthEvents(ctx, d.id);
    assert.equal(events.length, 1, JSON.stringify(events));
    assert.equal(events[0]?.type, "deployment.unhealthy");
    assert.deepEqual(
      { ...events[0]?.data, tenant_id: undefined },
      { deployment_id: d.id, deployment_name: d.name, revision_id: r1, reason: why, tenant_id: undefined },
    );
    const shown = await call<Processes>(ctx, "GET", `/v2/deployments/${d.id}/processes`);
    assert.equal(shown.body.health?.serving, false);
    assert.equal(shown.body.health?.unhealthy_reason, why);
    assert.equal(typeof shown.body.health?.unhealthy_since, "string");

    await report(ctx, agent, [], [pods(d.id, r1, [pod(r1, `${d.name}-abc-0`, { restarts: 5 })])]);
    events = await healthEvents(ctx, d.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ["deployment.unhealthy", "deployment.healthy"],
    );
    const back = await call<Processes>(ctx, "GET", `/v2/deployments/${d.id}/processes`);
    assert.equal(back.body.health?.serving, true);
    assert.equal(back.body.health?.unhealthy_since, null);
  });

  it("a revision still rolling out is not judged: its pods not serving emit nothing", async () => {
    const ctx = suite.ctx;
    const patched = await call<{ latest_revision_id: string }>(ctx, "PATCH", `/v2/deployments/${d.id}`, {
      source_revision_config: { image_uri: "registry.example/app:2" },
    });
    const r2 = patched.body.latest_revision_id;
    await pollUntil(ctx, agent, d.id, r2);
    const before = (await healthEvents(ctx, d.id)).length;
    const rolling = [
      pod(r1, `${d.name}-abc-0`),
      pod(r2, `${d.name}-def-0`, { state: "starting", started_at: undefined }),
    ];
    assert.equal(
      (await report(ctx, agent, [], [pods(d.id, r2, rolling, "no API pod is ready")])).status,
      204,
    );
    assert.equal((await healthEvents(ctx, d.id)).length, before);
    const res = await call<Processes>(ctx, "GET", `/v2/deployments/${d.id}/processes`);
    assert.deepEqual(
      new Map(res.body.resources.map((p) => [p.revision_id, p.state])),
      new Map([
        [r1, "running"],
        [r2, "starting"],
      ]),
    );
    await report(ctx, agent, [{ revision_id: r2, state: "available" }]);
    assert.equal(await waitForRevision(ctx.db, r2), "DEPLOYED");
  });

  it("the old shape (no deployments) is still taken; malformed pods and another's deployment are 422, nothing stored", async () => {
    const ctx = suite.ctx;
    assert.equal((await report(ctx, agent, [])).status, 204);
    const rev = (await call<{ active_revision_id: string }>(ctx, "GET", `/v2/deployments/${d.id}`)).body
      .active_revision_id;
    const good = pod(rev, "p-0");
    const bad = (over: Record<string, unknown>) =>
      report(ctx, agent, [], [{ ...pods(d.id, rev, [good]), ...over }]);
    assert.deepEqual(locs(await bad({ pods: [{ ...good, state: "exploded" }] })), [
      "body.deployments.0.pods.0.state",
    ]);
    assert.deepEqual(locs(await bad({ pods: [{ ...good, restarts: -1 }] })), [
      "body.deployments.0.pods.0.restarts",
    ]);
    assert.deepEqual(locs(await bad({ pods: [{ ...good, name: "" }] })), ["body.deployments.0.pods.0.name"]);
    assert.deepEqual(locs(await bad({ serving: "yes" })), ["body.deployments.0.serving"]);
    assert.deepEqual(locs(await bad({ deployment_id: "not-a-uuid" })), ["body.deployments.0.deployment_id"]);
    const local = await createDocker(ctx);
    const foreign = await report(
      ctx,
      agent,
      [],
      [pods(d.id, rev, [good]), pods(local.id, rev, [good]), pods(other.id, rev, [good])],
    );
    assert.deepEqual(locs(foreign), ["body.deployments.1.deployment_id", "body.deployments.2.deployment_id"]);
    const res = await call<Processes>(ctx, "GET", `/v2/deployments/${d.id}/processes`);
    assert.ok(!res.body.resources.some((p) => p.id === "p-0"), "nothing of a refused report is stored");
  });

  it("a listener key may not read processes, nor report for another listener", async () => {
    const ctx = suite.ctx;
    const res = await call(ctx, "GET", `/v2/deployments/${d.id}/processes`, undefined, { key: agent.key });
    assert.equal(res.status, 403);
    const second = await registerListener(ctx);
    const cross = await call(
      ctx,
      "POST",
      `/v2/listeners/${agent.id}/status`,
      { revisions: [] },
      { key: second.key },
    );
    assert.equal(cross.status, 403);
  });
});
