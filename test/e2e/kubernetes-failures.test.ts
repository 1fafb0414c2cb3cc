// Failed rollouts on Kubernetes end to end (real `slipway serve` and `slipway listener`, the stand-in
// API server): the test plays the kubelet and the deployment controller, the listener judges the
// rollout failed, the revision is DEPLOY_FAILED with the reason and the previous one keeps serving.
// Each test has its own deployment, so each runs alone.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DB_KINDS } from "../helpers/databases.ts";
import { eventually } from "../helpers/eventually.ts";
import { createApp, type K8sApp, type K8sStack, type Obj, startK8sStack } from "../helpers/k8s-stack.ts";

for (const kind of DB_KINDS) {
  describe(`Kubernetes rollouts that fail, end to end [${kind}]`, () => {
    let stack: K8sStack;

    before(async () => {
      stack = await startK8sStack(kind);
    });
    after(async () => {
      await stack?.close();
    });

    /** A deployment serving its first revision, then a rollout to `image` the cluster has taken. */
    const rolloutTo = async (name: string, image: string) => {
      const app = await createApp(stack, `${name}-${kind}`, "registry.example.com/shop:1");
      const served = await eventually("the first template", app.templateRevision).catch((err: Error) => {
        throw new Error(`${err.message}\n${stack.diagnostics()}`);
      });
      await app.completeRollout();
      await eventually("DEPLOYED", async () => (await app.revision(served)).status === "DEPLOYED");
      const res = await stack.api<{ latest_revision_id: string }>("PATCH", `/v2/deployments/${app.id}`, {
        source_revision_config: { image_uri: image },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const rev = res.body.latest_revision_id;
      await eventually("the new template", () => app.templateRevision() === rev);
      return { app, served, rev };
    };

    /** The rollout of `rev` fails with `reason`; `served` stays active and the cluster goes back to it. */
    const failsKeepingServed = async (r: { app: K8sApp; served: string; rev: string }, reason: RegExp) => {
      const failed = await eventually("DEPLOY_FAILED", async () => {
        const got = await r.app.revision(r.rev);
        return got.status === "DEPLOY_FAILED" ? got : undefined;
      });
      assert.match(String(failed.status_message), reason);
      assert.equal(await r.app.activeRevision(), r.served);
      await eventually(
        "the cluster back on the serving revision",
        () => r.app.templateRevision() === r.served,
      );
    };

    const appContainer = (restartCount: number, state: Obj, lastState: Obj = {}) => ({
      name: "app",
      image: "registry.example.com/shop:2",
      imageID: "",
      ready: false,
      started: false,
      restartCount,
      state,
      lastState,
    });

    it("a rollout whose image cannot be pulled: DEPLOY_FAILED with the reason; the old revision keeps serving", async () => {
      const r = await rolloutTo("pull", "registry.example.com/shop:missing");
      await r.app.createPod(`${r.app.base}-new-0`, {
        phase: "Pending",
        containerStatuses: [
          {
            ...appContainer(0, {
              waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" },
            }),
            image: "registry.example.com/shop:missing",
          },
        ],
      });
      await failsKeepingServed(r, /image pull failure \(ImagePullBackOff\)/);
    });

    it("a rollout whose container crash loops: DEPLOY_FAILED with the reason; the old revision keeps serving", async () => {
      const r = await rolloutTo("crash", "registry.example.com/shop:2");
      const pod = `${r.app.base}-new-0`;
      const waiting = {
        reason: "CrashLoopBackOff",
        message: `back-off 2m40s restarting failed container=app pod=${pod}`,
      };
      const exited = {
        exitCode: 1,
        reason: "Error",
        startedAt: "2026-11-26T04:00:00Z",
        finishedAt: "2026-11-26T04:00:01Z",
      };
      await r.app.createPod(pod, {
        phase: "Running",
        containerStatuses: [appContainer(5, { waiting }, { terminated: exited })],
      });
      await failsKeepingServed(r, /crash loop \(CrashLoopBackOff\) in container app after 5 restarts/);
    });

    it("a rollout past its progress deadline: DEPLOY_FAILED with ProgressDeadlineExceeded; a later rollout is DEPLOYED", async () => {
      const r = await rolloutTo("deadline", "registry.example.com/shop:2");
      const d = r.app.apiDeployment();
      assert.ok(d);
      const now = "2026-11-26T04:10:00Z";
      // The old pod still serves; the new one never became available within progressDeadlineSeconds.
      await r.app.patchStatus({
        observedGeneration: d.metadata.generation,
        replicas: 2,
        updatedReplicas: 1,
        readyReplicas: 1,
        availableReplicas: 1,
        unavailableReplicas: 1,
        conditions: [
          { type: "Available", status: "True", reason: "MinimumReplicasAvailable", lastTransitionTime: now },
          {
            type: "Progressing",
            status: "False",
            reason: "ProgressDeadlineExceeded",
            message: `ReplicaSet "${r.app.base}-7d4b9c8f6" has timed out progressing.`,
            lastTransitionTime: now,
          },
        ],
      });
      await failsKeepingServed(r, /ProgressDeadlineExceeded: ReplicaSet ".*" has timed out progressing\./);
      // The failed rollout's condition is still on the Deployment until the controller sees the next one.
      const next = await stack.api<{ latest_revision_id: string }>("PATCH", `/v2/deployments/${r.app.id}`, {
        source_revision_config: { image_uri: "registry.example.com/shop:3" },
      });
      assert.equal(next.status, 200, JSON.stringify(next.body));
      const rev = next.body.latest_revision_id;
      await eventually("the next template", () => r.app.templateRevision() === rev);
      await r.app.completeRollout();
      const done = await eventually("DEPLOYED or DEPLOY_FAILED", async () => {
        const got = await r.app.revision(rev);
        return got.status === "DEPLOYED" || got.status === "DEPLOY_FAILED" ? got : undefined;
      });
      assert.equal(done.status, "DEPLOYED", String(done.status_message));
    });
  });
}
