// The failures a rollout judge saw only at its progress deadline before: pods the ReplicaSet
// could not create (ReplicaFailure: Pod Security, a ResourceQuota), containers that cannot be
// configured, and pods no node takes. Fixtures are checked against the official schemas.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { deploymentState, podFailure } from "../../src/listener/rollout.ts";
import { validateManifest } from "../helpers/k8s-models.ts";

type Obj = Record<string, unknown>;
const T0 = "2026-11-27T04:00:00Z";
const labels = { "app.kubernetes.io/instance": "shop-5f1e2d3c", "app.kubernetes.io/component": "api" };

function deployment(conditions: Obj[]): Obj {
  const d = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "shop-5f1e2d3c", namespace: "apps", generation: 2, labels },
    spec: {
      replicas: 2,
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name: "app", image: "shop:2" }] } },
    },
    status: { observedGeneration: 2, replicas: 0, updatedReplicas: 0, conditions },
  };
  validateManifest(d);
  return d;
}

function pod(status: Obj): Obj {
  const p = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "shop-5f1e2d3c-7d4b9c8f6-x2v9q", namespace: "apps", labels },
    spec: { containers: [{ name: "app", image: "shop:2" }] },
    status,
  };
  validateManifest(p);
  return p;
}

const FORBIDDEN =
  'pods "shop-5f1e2d3c-7d4b9c8f6-x2v9q" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true';

describe("rollout failures that need no deadline", () => {
  it("ReplicaFailure (FailedCreate) fails the revision with the admission's message", () => {
    const j = deploymentState(
      deployment([
        {
          type: "Progressing",
          status: "True",
          reason: "NewReplicaSetCreated",
          lastUpdateTime: T0,
          lastTransitionTime: T0,
        },
        {
          type: "ReplicaFailure",
          status: "True",
          reason: "FailedCreate",
          message: FORBIDDEN,
          lastUpdateTime: T0,
          lastTransitionTime: T0,
        },
      ]),
    );
    assert.deepEqual(j, { state: "failed", reason: `ReplicaFailure (FailedCreate): ${FORBIDDEN}` });
  });

  it("a ReplicaFailure that has cleared (status False) is no failure", () => {
    const j = deploymentState(
      deployment([
        {
          type: "ReplicaFailure",
          status: "False",
          reason: "FailedCreate",
          lastUpdateTime: T0,
          lastTransitionTime: T0,
        },
      ]),
    );
    assert.equal(j.state, "progressing");
  });

  it("CreateContainerConfigError: the kubelet's message (a missing Secret key) is the reason", () => {
    const reason = podFailure([
      pod({
        phase: "Pending",
        containerStatuses: [
          {
            name: "app",
            image: "shop:2",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: {
              waiting: {
                reason: "CreateContainerConfigError",
                message: "couldn't find key STRIPE in Secret apps/shop-keys",
              },
            },
          },
        ],
      }),
    ]);
    assert.equal(
      reason,
      "CreateContainerConfigError in container app: couldn't find key STRIPE in Secret apps/shop-keys",
    );
  });

  it("an unschedulable pod, with the scheduler's message", () => {
    const message = "0/3 nodes are available: 3 Insufficient cpu.";
    const reason = podFailure([
      pod({
        phase: "Pending",
        conditions: [
          { type: "PodScheduled", status: "False", reason: "Unschedulable", message, lastTransitionTime: T0 },
        ],
      }),
    ]);
    assert.equal(reason, `unschedulable pod shop-5f1e2d3c-7d4b9c8f6-x2v9q: ${message}`);
  });

  it("a pod still being scheduled (no condition yet, or PodScheduled True) is no failure", () => {
    assert.equal(podFailure([pod({ phase: "Pending" })]), undefined);
    assert.equal(
      podFailure([
        pod({
          phase: "Pending",
          conditions: [{ type: "PodScheduled", status: "True", lastTransitionTime: T0 }],
        }),
      ]),
      undefined,
    );
  });
});
