// The Kubernetes data plane end to end: a real `slipway serve` (control plane, reconciler on), a
// real `slipway listener` process, and the stand-in API server in place of a cluster. The test plays
// the kubelet and the deployment controller by writing Deployment and Pod status. Failed rollouts
// are in kubernetes-failures.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DB_KINDS } from "../helpers/databases.ts";
import { eventually } from "../helpers/eventually.ts";
import {
  createApp,
  type K8sApp,
  type K8sStack,
  NS,
  type Obj,
  resource,
  startK8sStack,
} from "../helpers/k8s-stack.ts";

for (const kind of DB_KINDS) {
  describe(`Kubernetes through a listener, end to end [${kind}]`, () => {
    let stack: K8sStack;
    let app: K8sApp;

    before(async () => {
      stack = await startK8sStack(kind);
      app = await createApp(stack, `shop-${kind}`, "registry.example.com/shop:1", {
        secrets: [{ name: "GREETING", value: "hello" }],
      });
    });
    after(async () => {
      await stack?.close();
    });

    it("create: the listener applies its objects; the completed rollout makes it DEPLOYED and remote", async () => {
      const d = await eventually("the API Deployment", app.apiDeployment).catch((err: Error) => {
        throw new Error(`${err.message}\n${stack.diagnostics()}`);
      });
      assert.equal(d.spec.template.spec.containers[0]?.image, "registry.example.com/shop:1");
      const kinds = stack.k8s.store.list(resource("", "v1", "secrets"), NS, {
        labelSelector: `slipway.dev/deployment-id=${app.id}`,
        fieldSelector: null,
      });
      assert.equal(kinds.length, 1);
      assert.ok(
        stack.k8s.requests.some(
          (l) =>
            l.startsWith(`PATCH /apis/apps/v1/namespaces/${NS}/deployments/${app.base}`) &&
            l.includes("dryRun=All") &&
            l.includes("fieldManager=slipway"),
        ),
      );
      const rev = d.metadata.labels?.["slipway.dev/revision-id"] ?? "";
      await app.completeRollout();
      await eventually("DEPLOYED", async () => (await app.revision(rev)).status === "DEPLOYED");
      assert.equal(await app.activeRevision(), rev);
      const remote = (
        await stack.api<{ resources: { id: string }[] }>(
          "GET",
          "/v2/deployments?remote_reconciled=true&limit=100",
        )
      ).body;
      assert.ok(remote.resources.some((x) => x.id === app.id));
    });

    it("PATCH image: a new rollout of the same Deployment, then DEPLOYED", async () => {
      const res = await stack.api<{ latest_revision_id: string }>("PATCH", `/v2/deployments/${app.id}`, {
        source_revision_config: { image_uri: "registry.example.com/shop:2" },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const rev = res.body.latest_revision_id;
      await eventually("the new template", () => app.templateRevision() === rev);
      await app.completeRollout();
      await eventually("DEPLOYED", async () => (await app.revision(rev)).status === "DEPLOYED");
    });

    it("listener stopped: UNKNOWN; started again: READY", async () => {
      const status = async () => (await stack.api<Obj>("GET", `/v2/deployments/${app.id}`)).body.status;
      await stack.stopListener();
      await eventually("UNKNOWN", async () => (await status()) === "UNKNOWN");
      const l = (await stack.api<{ resources: { status: string }[] }>("GET", "/v2/listeners?limit=10")).body
        .resources[0];
      assert.equal(l?.status, "DISCONNECTED");
      await stack.startListener();
      await eventually("READY", async () => (await status()) === "READY");
    });

    it("delete: every object of the deployment is pruned", async () => {
      const res = await stack.api("DELETE", `/v2/deployments/${app.id}`);
      assert.equal(res.status, 204);
      await eventually(
        "pruned",
        () =>
          app.deployments().length === 0 &&
          stack.k8s.store.list(resource("", "v1", "services"), NS, {
            labelSelector: `slipway.dev/deployment-id=${app.id}`,
            fieldSelector: null,
          }).length === 0,
      );
      await eventually(
        "404",
        async () => (await stack.api("GET", `/v2/deployments/${app.id}`)).status === 404,
      );
    });
  });
}
