// The listener's pods judge (src/listener/pods.ts) on pods and Deployments as the kubelet, the
// scheduler and the deployment controller write them; every fixture is checked against the
// official schemas first.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { podState, podsReport } from "../../src/listener/pods.ts";
import { validateManifest } from "../helpers/k8s-models.ts";

type Obj = Record<string, unknown>;

const DEPLOYMENT = "5f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
const R1 = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
const R2 = "1b2c3d4e-5f60-4718-9a0b-c1d2e3f4a5b6";
const T0 = "2026-11-27T04:00:00Z";
const BASE = "shop-5f1e2d3c";

const labels = (revision: string, component: string) => ({
  "app.kubernetes.io/instance": BASE,
  "app.kubernetes.io/component": component,
  "slipway.dev/revision-id": revision,
});

function pod(name: string, status: Obj, o: { revision?: string; component?: string; meta?: Obj } = {}): Obj {
  const p = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "apps", labels: labels(o.revision ?? R1, o.component ?? "api"), ...o.meta },
    spec: { containers: [{ name: "app", image: "registry.example.com/shop:2" }] },
    status,
  };
  validateManifest(p);
  return p;
}

const container = (state: Obj, restartCount = 0, lastState: Obj = {}) => ({
  name: "app",
  image: "registry.example.com/shop:2",
  imageID: "",
  ready: "running" in state,
  restartCount,
  state,
  lastState,
});
const readyStatus = (restarts = 0) => ({
  phase: "Running",
  conditions: [{ type: "Ready", status: "True", lastTransitionTime: T0 }],
  containerStatuses: [container({ running: { startedAt: T0 } }, restarts)],
});
const notReady = [{ type: "Ready", status: "False", lastTransitionTime: T0 }];
const crashLoop = (restarts: number) => ({
  phase: "Running",
  conditions: notReady,
  containerStatuses: [
    container(
      { waiting: { reason: "CrashLoopBackOff", message: "back-off 1m20s restarting failed container=app" } },
      restarts,
      { terminated: { exitCode: 137, reason: "OOMKilled", startedAt: T0, finishedAt: T0 } },
    ),
  ],
});

describe("podState", () => {
  it("ready, with its restarts and when its container started", () => {
    assert.deepEqual(podState(pod("a", readyStatus(2))), { state: "ready", restarts: 2, startedAt: T0 });
  });

  it("crash-looping, with the last exit and the kubelet's message", () => {
    assert.deepEqual(podState(pod("a", crashLoop(6))), {
      state: "crash_looping",
      restarts: 6,
      reason:
        "CrashLoopBackOff in container app (last exit 137, OOMKilled): back-off 1m20s restarting failed container=app",
    });
  });

  it("starting with a reason: an image that cannot be pulled, a missing Secret key, no node with room", () => {
    const waiting = (reason: string, message: string) =>
      pod("a", {
        phase: "Pending",
        conditions: notReady,
        containerStatuses: [container({ waiting: { reason, message } })],
      });
    assert.deepEqual(podState(waiting("ImagePullBackOff", 'Back-off pulling image "x"')), {
      state: "starting",
      restarts: 0,
      reason: 'ImagePullBackOff in container app: Back-off pulling image "x"',
    });
    assert.equal(
      podState(waiting("CreateContainerConfigError", "couldn't find key K in Secret apps/s")).reason,
      "CreateContainerConfigError in container app: couldn't find key K in Secret apps/s",
    );
    const unschedulable = pod("a", {
      phase: "Pending",
      conditions: [
        {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message: "0/3 nodes are available: 3 Insufficient cpu.",
          lastTransitionTime: T0,
        },
      ],
    });
    assert.deepEqual(podState(unschedulable), {
      state: "starting",
      restarts: 0,
      reason: "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.",
    });
  });

  it("starting without a reason while a container is only being created", () => {
    const creating = pod("a", {
      phase: "Pending",
      containerStatuses: [container({ waiting: { reason: "ContainerCreating" } })],
    });
    assert.deepEqual(podState(creating), { state: "starting", restarts: 0 });
  });

  it("restarting: a container that exited and is started again (not yet backing off)", () => {
    const exited = pod("a", {
      phase: "Running",
      conditions: notReady,
      containerStatuses: [
        container({ terminated: { exitCode: 1, reason: "Error", startedAt: T0, finishedAt: T0 } }, 1),
      ],
    });
    assert.deepEqual(podState(exited), {
      state: "restarting",
      restarts: 1,
      reason: "container app exited 1: Error",
    });
  });

  it("failed: an evicted pod, with the kubelet's message", () => {
    const evicted = pod("a", {
      phase: "Failed",
      reason: "Evicted",
      message: "The node was low on resource: memory.",
    });
    assert.deepEqual(podState(evicted), {
      state: "failed",
      restarts: 0,
      reason: "Evicted: The node was low on resource: memory.",
    });
  });
});

function workload(revision: string, component: string, conditions: Obj[]): Obj {
  const l = labels(revision, component);
  const d = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: component === "api" ? BASE : `${BASE}-${component}`,
      namespace: "apps",
      generation: 1,
      labels: l,
    },
    spec: {
      selector: {
        matchLabels: { "app.kubernetes.io/instance": BASE, "app.kubernetes.io/component": component },
      },
      template: { metadata: { labels: l }, spec: { containers: [{ name: "app", image: "x:1" }] } },
    },
    status: { observedGeneration: 1, conditions },
  };
  validateManifest(d);
  return d;
}

describe("podsReport", () => {
  it("serving while one API pod of the desired revision is ready; pods of every revision, sorted", () => {
    const report = podsReport({
      deploymentId: DEPLOYMENT,
      revisionId: R1,
      pods: [
        pod(`${BASE}-b`, crashLoop(3)),
        pod(`${BASE}-a`, readyStatus()),
        pod(`${BASE}-queue-a`, readyStatus(), { component: "queue" }),
      ],
      workloads: [],
    });
    assert.equal(report.serving, true);
    assert.equal(report.reason, undefined);
    assert.deepEqual(
      report.pods.map((p) => [p.name, p.component, p.state]),
      [
        [`${BASE}-a`, "api", "ready"],
        [`${BASE}-b`, "api", "crash_looping"],
        [`${BASE}-queue-a`, "queue", "ready"],
      ],
    );
  });

  it("not serving: the worst pod's reason; a ready pod of another revision or a queue worker does not count", () => {
    const report = podsReport({
      deploymentId: DEPLOYMENT,
      revisionId: R2,
      pods: [
        pod(`${BASE}-old`, readyStatus(), { revision: R1 }),
        pod(`${BASE}-queue-a`, readyStatus(), { revision: R2, component: "queue" }),
        pod(`${BASE}-new-1`, { phase: "Pending" }, { revision: R2 }),
        pod(`${BASE}-new-2`, crashLoop(4), { revision: R2 }),
      ],
      workloads: [],
    });
    assert.equal(report.serving, false);
    assert.match(String(report.reason), new RegExp(`^${BASE}-new-2: CrashLoopBackOff in container app`));
  });

  it("a ReplicaFailure on the revision's Deployment is a refused pod named after it, with the admission's message", () => {
    const message =
      'pods "shop-x" is forbidden: exceeded quota: apps-quota, requested: pods=1, used: pods=10, limited: pods=10';
    const report = podsReport({
      deploymentId: DEPLOYMENT,
      revisionId: R1,
      pods: [],
      workloads: [
        workload(R1, "api", [
          {
            type: "ReplicaFailure",
            status: "True",
            reason: "FailedCreate",
            message,
            lastUpdateTime: T0,
            lastTransitionTime: T0,
          },
        ]),
        workload(R1, "queue", [
          {
            type: "ReplicaFailure",
            status: "False",
            reason: "FailedCreate",
            lastUpdateTime: T0,
            lastTransitionTime: T0,
          },
        ]),
      ],
    });
    assert.deepEqual(report.pods, [
      {
        name: BASE,
        revision_id: R1,
        component: "api",
        state: "refused",
        restarts: 0,
        reason: `FailedCreate: ${message}`,
      },
    ]);
    assert.equal(report.serving, false);
    assert.equal(report.reason, `${BASE}: FailedCreate: ${message}`);
  });

  it("no pods at all: not serving, saying so; pods being deleted are left out", () => {
    const going = pod(`${BASE}-a`, readyStatus(), { meta: { deletionTimestamp: T0 } });
    const report = podsReport({ deploymentId: DEPLOYMENT, revisionId: R1, pods: [going], workloads: [] });
    assert.deepEqual(report, {
      deployment_id: DEPLOYMENT,
      revision_id: R1,
      serving: false,
      reason: "no API pod runs",
      pods: [],
    });
  });
});
