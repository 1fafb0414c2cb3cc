// Why over 300 lines: one realistic Deployment or Pod per case, for every branch of the rollout judge.
// The listener's rollout judge on Deployments and Pods as the deployment controller and kubelet write
// them. Every fixture is checked against the official schemas first, so the cases stay realistic.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { deploymentState, podFailure, revisionState } from "../../src/listener/rollout.ts";
import { validateManifest } from "../helpers/k8s-models.ts";

type Obj = Record<string, unknown>;

const REVISION = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
const BASE = "shop-5f1e2d3c";
const T0 = "2026-11-26T04:00:00Z";
const labels = (component: string) => ({
  "app.kubernetes.io/name": "shop",
  "app.kubernetes.io/instance": BASE,
  "app.kubernetes.io/component": component,
  "slipway.dev/revision-id": REVISION,
});

/** A Deployment of `component` as the API returns it, with the controller's `status`. */
function deployment(o: { component?: string; generation?: number; replicas?: number; status: Obj }): Obj {
  const component = o.component ?? "api";
  const name = component === "api" ? BASE : `${BASE}-${component}`;
  const d = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "team-a", generation: o.generation ?? 2, labels: labels(component) },
    spec: {
      ...(o.replicas === undefined ? {} : { replicas: o.replicas }),
      selector: {
        matchLabels: { "app.kubernetes.io/instance": BASE, "app.kubernetes.io/component": component },
      },
      progressDeadlineSeconds: 600,
      template: {
        metadata: { labels: labels(component) },
        spec: { containers: [{ name: "app", image: "registry.example.com/shop:2" }] },
      },
    },
    status: o.status,
  };
  validateManifest(d);
  return d;
}

const available = (status = "True") => ({
  type: "Available",
  status,
  reason: status === "True" ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
  lastUpdateTime: T0,
  lastTransitionTime: T0,
});
const progressing = (status: string, reason: string, message?: string) => ({
  type: "Progressing",
  status,
  reason,
  ...(message === undefined ? {} : { message }),
  lastUpdateTime: T0,
  lastTransitionTime: T0,
});

/** Controller status at `generation`: `total` pods, `updated` of them on the current template. */
function rollout(
  generation: number,
  total: number,
  updated: number,
  availableReplicas: number,
  conditions: Obj[],
) {
  return {
    observedGeneration: generation,
    replicas: total,
    updatedReplicas: updated,
    readyReplicas: availableReplicas,
    availableReplicas,
    ...(total > availableReplicas ? { unavailableReplicas: total - availableReplicas } : {}),
    conditions,
  };
}
const done = (replicas: number) =>
  rollout(2, replicas, replicas, replicas, [
    available(),
    progressing(
      "True",
      "NewReplicaSetAvailable",
      `ReplicaSet "${BASE}-7d4b9c8f6" has successfully progressed.`,
    ),
  ]);
const midway = rollout(2, 3, 1, 2, [
  available(),
  progressing("True", "ReplicaSetUpdated", `ReplicaSet "${BASE}-7d4b9c8f6" is progressing.`),
]);
const DEADLINE_MESSAGE = `ReplicaSet "${BASE}-7d4b9c8f6" has timed out progressing.`;
const deadline = (message?: string) =>
  rollout(2, 3, 1, 2, [available(), progressing("False", "ProgressDeadlineExceeded", message)]);

/** A Pod of the revision with the kubelet's container statuses. */
function pod(o: { containers: Obj[]; init?: Obj[]; phase?: string }): Obj {
  const p = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: `${BASE}-7d4b9c8f6-x2v9q`, namespace: "team-a", labels: labels("api") },
    spec: {
      ...(o.init ? { initContainers: [{ name: "migrate", image: "registry.example.com/shop:2" }] } : {}),
      containers: [{ name: "app", image: "registry.example.com/shop:2" }],
    },
    status: {
      phase: o.phase ?? "Pending",
      ...(o.init ? { initContainerStatuses: o.init } : {}),
      containerStatuses: o.containers,
    },
  };
  validateManifest(p);
  return p;
}

function container(name: string, state: Obj, restartCount = 0, lastState: Obj = {}): Obj {
  const running = "running" in state;
  return {
    name,
    image: "registry.example.com/shop:2",
    imageID: running ? "registry.example.com/shop@sha256:3f1c9a7e" : "",
    ready: running,
    started: running,
    restartCount,
    state,
    lastState,
  };
}
const waiting = (reason: string, message?: string) => ({
  waiting: { reason, ...(message === undefined ? {} : { message }) },
});
const runningPod = () =>
  pod({ phase: "Running", containers: [container("app", { running: { startedAt: T0 } })] });
const crashLoop = (name: string, restarts: number) =>
  container(
    name,
    waiting(
      "CrashLoopBackOff",
      `back-off 2m40s restarting failed container=${name} pod=${BASE}-7d4b9c8f6-x2v9q`,
    ),
    restarts,
    { terminated: { exitCode: 1, reason: "Error", startedAt: T0, finishedAt: T0 } },
  );

describe("deploymentState", () => {
  it("applied while the controller has not observed it (no observedGeneration yet)", () => {
    assert.deepEqual(deploymentState(deployment({ generation: 1, replicas: 1, status: {} })), {
      state: "applied",
    });
  });

  it("applied while observedGeneration is behind generation, though the old template is fully up", () => {
    assert.deepEqual(deploymentState(deployment({ generation: 3, replicas: 3, status: done(3) })), {
      state: "applied",
    });
  });

  it("applied behind generation even when the previous template's rollout had exceeded its deadline", () => {
    // kubectl reads the Progressing condition only once the controller has seen the new template.
    const d = deployment({ generation: 3, replicas: 3, status: deadline(DEADLINE_MESSAGE) });
    assert.deepEqual(deploymentState(d), { state: "applied" });
  });

  it("progressing while only some replicas are on the new template", () => {
    assert.deepEqual(deploymentState(deployment({ replicas: 3, status: midway })), { state: "progressing" });
  });

  it("progressing while every replica is updated but not all are available yet", () => {
    const status = rollout(2, 3, 3, 2, [
      available(),
      progressing("True", "ReplicaSetUpdated", `ReplicaSet "${BASE}-7d4b9c8f6" is progressing.`),
    ]);
    assert.deepEqual(deploymentState(deployment({ replicas: 3, status })), { state: "progressing" });
  });

  it("progressing while old replicas are still there (status.replicas above updatedReplicas)", () => {
    const status = rollout(2, 4, 3, 3, [
      available(),
      progressing("True", "ReplicaSetUpdated", `ReplicaSet "${BASE}-7d4b9c8f6" is progressing.`),
    ]);
    assert.deepEqual(deploymentState(deployment({ replicas: 3, status })), { state: "progressing" });
  });

  it("available when every wanted replica is updated and available", () => {
    assert.deepEqual(deploymentState(deployment({ replicas: 3, status: done(3) })), { state: "available" });
  });

  it("wants one replica when spec.replicas is missing (the API's default)", () => {
    assert.deepEqual(deploymentState(deployment({ status: done(1) })), { state: "available" });
    // Zero replicas would be "available" with nothing up; the default of 1 waits for one.
    const none = rollout(2, 0, 0, 0, [
      available("False"),
      progressing("True", "NewReplicaSetCreated", `Created new replica set "${BASE}-7d4b9c8f6"`),
    ]);
    assert.deepEqual(deploymentState(deployment({ status: none })), { state: "progressing" });
  });

  it("failed on ProgressDeadlineExceeded, with the condition's message", () => {
    assert.deepEqual(deploymentState(deployment({ replicas: 3, status: deadline(DEADLINE_MESSAGE) })), {
      state: "failed",
      reason: `ProgressDeadlineExceeded: ${DEADLINE_MESSAGE}`,
    });
  });

  it("failed on ProgressDeadlineExceeded without a message: the reason alone", () => {
    assert.deepEqual(deploymentState(deployment({ replicas: 3, status: deadline() })), {
      state: "failed",
      reason: "ProgressDeadlineExceeded",
    });
  });

  it("a Progressing=False condition of another reason is not a deadline failure", () => {
    const status = rollout(2, 3, 1, 2, [
      available(),
      progressing("False", "ReplicaSetCreateError", 'pods "shop" is forbidden: exceeded quota'),
    ]);
    assert.deepEqual(deploymentState(deployment({ replicas: 3, status })), { state: "progressing" });
  });
});

describe("podFailure", () => {
  for (const reason of ["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"]) {
    it(`an image pull failure: ${reason}`, () => {
      const message = `Back-off pulling image "registry.example.com/shop:2"`;
      const p = pod({ containers: [container("app", waiting(reason, message))] });
      assert.equal(podFailure([p]), `image pull failure (${reason}) for container app: ${message}`);
    });
  }

  it("an image pull failure without a message: no trailing colon", () => {
    const p = pod({ containers: [container("app", waiting("ErrImagePull"))] });
    assert.equal(podFailure([p]), "image pull failure (ErrImagePull) for container app");
  });

  it("a crash loop, with the container's restart count and the kubelet's message", () => {
    const p = pod({ phase: "Running", containers: [crashLoop("app", 5)] });
    assert.equal(
      podFailure([p]),
      `crash loop (CrashLoopBackOff) in container app after 5 restarts: back-off 2m40s restarting failed container=app pod=${BASE}-7d4b9c8f6-x2v9q`,
    );
  });

  it("an init container's crash loop, while the app container waits on it", () => {
    const p = pod({
      init: [crashLoop("migrate", 3)],
      containers: [container("app", waiting("PodInitializing"))],
    });
    assert.match(
      podFailure([p]) ?? "",
      /^crash loop \(CrashLoopBackOff\) in container migrate after 3 restarts: /,
    );
  });

  it("an init container's image pull failure", () => {
    const p = pod({
      init: [container("migrate", waiting("ImagePullBackOff"))],
      containers: [container("app", waiting("PodInitializing"))],
    });
    assert.equal(podFailure([p]), "image pull failure (ImagePullBackOff) for container migrate");
  });

  it("the failing pod among healthy ones", () => {
    const failing = pod({ containers: [container("app", waiting("ErrImageNeverPull"))] });
    assert.equal(
      podFailure([runningPod(), failing]),
      "image pull failure (ErrImageNeverPull) for container app",
    );
  });

  it("none: no pods, running pods, a restarted container that runs again", () => {
    assert.equal(podFailure([]), undefined);
    assert.equal(podFailure([runningPod()]), undefined);
    const recovered = pod({
      phase: "Running",
      containers: [
        container("app", { running: { startedAt: T0 } }, 2, {
          terminated: { exitCode: 1, reason: "Error", startedAt: T0, finishedAt: T0 },
        }),
      ],
    });
    assert.equal(podFailure([recovered]), undefined);
  });

  it("none for waiting reasons of a starting pod (ContainerCreating, PodInitializing)", () => {
    assert.equal(
      podFailure([pod({ containers: [container("app", waiting("ContainerCreating"))] })]),
      undefined,
    );
    const init = pod({
      init: [container("migrate", waiting("PodInitializing"))],
      containers: [container("app", waiting("PodInitializing"))],
    });
    assert.equal(podFailure([init]), undefined);
  });
});

describe("revisionState", () => {
  const api = (status: Obj) => deployment({ replicas: 2, status });
  const queue = (status: Obj) => deployment({ component: "queue", replicas: 2, status });

  it("no workloads yet: applied", () => {
    assert.deepEqual(revisionState(REVISION, [], []), { revision_id: REVISION, state: "applied" });
  });

  it("the least advanced workload wins across the API and the queue workers", () => {
    const report = (deployments: Obj[]) => revisionState(REVISION, deployments, [runningPod()]);
    assert.deepEqual(report([api(done(2)), queue(midway)]), { revision_id: REVISION, state: "progressing" });
    assert.deepEqual(report([api(midway), queue(done(2))]), { revision_id: REVISION, state: "progressing" });
    assert.deepEqual(report([api(done(2)), queue({})]), { revision_id: REVISION, state: "applied" });
    assert.deepEqual(report([api(done(2)), queue(done(2))]), { revision_id: REVISION, state: "available" });
  });

  it("a failed workload wins, with its reason, over the others and over pod failures", () => {
    const crashing = pod({ phase: "Running", containers: [crashLoop("app", 5)] });
    assert.deepEqual(revisionState(REVISION, [api(done(2)), queue(deadline(DEADLINE_MESSAGE))], [crashing]), {
      revision_id: REVISION,
      state: "failed",
      reason: `ProgressDeadlineExceeded: ${DEADLINE_MESSAGE}`,
    });
  });

  it("every workload available: available, whatever a pod shows", () => {
    // A rolled-out revision whose pod later crash loops is not a failed rollout.
    const crashing = pod({ phase: "Running", containers: [crashLoop("app", 5)] });
    assert.deepEqual(revisionState(REVISION, [api(done(2)), queue(done(2))], [crashing]), {
      revision_id: REVISION,
      state: "available",
    });
  });

  it("a pod failure while progressing: failed with the pod's reason", () => {
    const pulling = pod({
      containers: [container("app", waiting("ImagePullBackOff", "Back-off pulling image"))],
    });
    assert.deepEqual(revisionState(REVISION, [api(midway), queue(done(2))], [runningPod(), pulling]), {
      revision_id: REVISION,
      state: "failed",
      reason: "image pull failure (ImagePullBackOff) for container app: Back-off pulling image",
    });
  });

  it("progressing pods that are only starting: still progressing", () => {
    const starting = pod({ containers: [container("app", waiting("ContainerCreating"))] });
    assert.deepEqual(revisionState(REVISION, [api(midway)], [starting]), {
      revision_id: REVISION,
      state: "progressing",
    });
  });
});
