// The Kubernetes data plane end to end: a real `slipway serve` (control plane, reconciler on), a
// real `slipway listener` process, and the stand-in API server in place of a cluster. The test plays
// the kubelet and the deployment controller by writing Deployment and Pod status.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, DB_KINDS } from "../helpers/databases.ts";
import { eventually } from "../helpers/eventually.ts";
import { findResource } from "../helpers/k8s-standin/resources.ts";
import { type StandIn, startK8sStandIn } from "../helpers/k8s-standin/server.ts";
import { runSlipway, type SlipwayProcess } from "../helpers/process.ts";

const KEY = "e2e-bootstrap-key-0123456789";
const NS = "apps";
type Obj = Record<string, unknown>;
type Labelled = Obj & { metadata: { name: string; generation?: number; labels?: Record<string, string> } };

for (const kind of DB_KINDS) {
  describe(`Kubernetes through a listener, end to end [${kind}]`, () => {
    let k8s: StandIn;
    let dir: string;
    let server: SlipwayProcess;
    let url: string;
    let listener: SlipwayProcess | undefined;
    let listenerArgs: string[];
    let drop: () => Promise<void> = async () => {};
    let deploymentId: string;
    let base: string;

    const api = async <T = Obj>(
      method: string,
      path: string,
      body?: unknown,
      key = KEY,
    ): Promise<{ status: number; body: T }> => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
    };
    const deploymentsOf = () =>
      k8s.store.list(resource("apps", "v1", "deployments"), NS, {
        labelSelector: `slipway.dev/deployment-id=${deploymentId}`,
        fieldSelector: null,
      }) as Labelled[];
    const apiDeployment = () => deploymentsOf().find((d) => d.metadata.name === base);
    const revision = async (id: string) =>
      (await api<Obj>("GET", `/v2/deployments/${deploymentId}/revisions/${id}`)).body;

    /** The deployment controller and kubelet: every replica of the current template is up. */
    const completeRollout = async () => {
      const d = apiDeployment();
      assert.ok(d);
      const replicas = 1;
      const res = await fetch(`${k8s.url}/apis/apps/v1/namespaces/${NS}/deployments/${base}/status`, {
        method: "PATCH",
        headers: { "content-type": "application/merge-patch+json" },
        body: JSON.stringify({
          status: {
            observedGeneration: d.metadata.generation,
            replicas,
            updatedReplicas: replicas,
            readyReplicas: replicas,
            availableReplicas: replicas,
            conditions: [{ type: "Available", status: "True", reason: "MinimumReplicasAvailable" }],
          },
        }),
      });
      assert.equal(res.status, 200);
    };

    const startListener = () => {
      listener = runSlipway(["listener", ...listenerArgs], {});
      return listener.waitFor(/listener: started/, 300_000);
    };

    before(async () => {
      k8s = await startK8sStandIn();
      dir = mkdtempSync(join(tmpdir(), "slipway-e2e-k8s-"));
      const env: Record<string, string> = {
        PORT: "0",
        HOST: "127.0.0.1",
        SLIPWAY_DATA_DIR: join(dir, "data"),
        SLIPWAY_BOOTSTRAP_API_KEY: KEY,
        SLIPWAY_APPS_PORT: "0",
        SLIPWAY_APPS_DOMAIN: "apps.example.test",
        SLIPWAY_LISTENER_TIMEOUT_S: "3",
        SLIPWAY_RATE_LIMIT_PER_MINUTE: "0",
        LOG_LEVEL: "warn",
      };
      if (kind === "postgres") {
        const db = await createTestDatabase("postgres");
        drop = db.drop;
        env.DATABASE_URL = db.url ?? "";
      }
      server = runSlipway(["serve"], env);
      url = (await server.waitFor(/serving (http:\/\/\S+)/, 600_000))[1] ?? "";
      const created = await api<{ id: string }>("POST", "/v2/listeners", {
        compute_type: "k8s",
        compute_id: `e2e-${kind}`,
        compute_config: { k8s_namespaces: [NS] },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const key = await api<{ key: string }>("POST", "/v1/api-keys", {
        role: "listener",
        listener_id: created.body.id,
        description: "e2e listener",
      });
      assert.equal(key.status, 201, JSON.stringify(key.body));
      listenerArgs = [
        "--url",
        url,
        "--api-key",
        key.body.key,
        "--listener-id",
        created.body.id,
        "--kubeconfig",
        k8s.kubeconfig(dir, NS),
        "--ingress-class",
        "nginx",
        "--wait",
        "5",
        "--resync",
        "1",
        "--heartbeat",
        "1",
      ];
      await startListener();
      const dep = await api<{ id: string; latest_revision_id: string }>("POST", "/v2/deployments", {
        name: `shop-${kind}`,
        source: "external_docker",
        source_config: { listener_id: created.body.id, listener_config: { k8s_namespace: NS } },
        source_revision_config: { image_uri: "registry.example.com/shop:1" },
        secrets: [{ name: "GREETING", value: "hello" }],
      });
      assert.equal(dep.status, 201, JSON.stringify(dep.body));
      deploymentId = dep.body.id;
      base = `shop-${kind}-${deploymentId.slice(0, 8)}`;
    });
    after(async () => {
      await listener?.stop();
      await server?.stop();
      await k8s?.close();
      await drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("create: the listener applies its objects; the completed rollout makes it DEPLOYED and remote", async () => {
      const d = await eventually("the API Deployment", apiDeployment).catch((err: Error) => {
        throw new Error(
          `${err.message}\nlistener:\n${listener?.output()}\ncluster requests:\n${k8s.requests.slice(-10).join("\n")}`,
        );
      });
      const container = (d.spec as { template: { spec: { containers: Obj[] } } }).template.spec.containers[0];
      assert.equal(container?.image, "registry.example.com/shop:1");
      const kinds = k8s.store.list(resource("", "v1", "secrets"), NS, {
        labelSelector: `slipway.dev/deployment-id=${deploymentId}`,
        fieldSelector: null,
      });
      assert.equal(kinds.length, 1);
      assert.ok(
        k8s.requests.some(
          (l) =>
            l.startsWith(`PATCH /apis/apps/v1/namespaces/${NS}/deployments/${base}`) &&
            l.includes("dryRun=All") &&
            l.includes("fieldManager=slipway"),
        ),
      );
      const rev = d.metadata.labels?.["slipway.dev/revision-id"] ?? "";
      await completeRollout();
      await eventually("DEPLOYED", async () => (await revision(rev)).status === "DEPLOYED");
      const got = (await api<Obj>("GET", `/v2/deployments/${deploymentId}`)).body;
      assert.equal(got.active_revision_id, rev);
      const remote = (
        await api<{ resources: { id: string }[] }>("GET", "/v2/deployments?remote_reconciled=true&limit=100")
      ).body;
      assert.ok(remote.resources.some((x) => x.id === deploymentId));
    });

    it("PATCH image: a new rollout of the same Deployment, then DEPLOYED", async () => {
      const res = await api<{ latest_revision_id: string }>("PATCH", `/v2/deployments/${deploymentId}`, {
        source_revision_config: { image_uri: "registry.example.com/shop:2" },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const rev = res.body.latest_revision_id;
      await eventually(
        "the new template",
        () => apiDeployment()?.metadata.labels?.["slipway.dev/revision-id"] === rev,
      );
      await completeRollout();
      await eventually("DEPLOYED", async () => (await revision(rev)).status === "DEPLOYED");
    });

    it("a rollout whose image cannot be pulled: DEPLOY_FAILED with the reason; the old revision keeps serving", async () => {
      const before = (await api<{ active_revision_id: string }>("GET", `/v2/deployments/${deploymentId}`))
        .body.active_revision_id;
      const res = await api<{ latest_revision_id: string }>("PATCH", `/v2/deployments/${deploymentId}`, {
        source_revision_config: { image_uri: "registry.example.com/shop:missing" },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const rev = res.body.latest_revision_id;
      const d = await eventually("the new template", () =>
        apiDeployment()?.metadata.labels?.["slipway.dev/revision-id"] === rev ? apiDeployment() : undefined,
      );
      const labels = (d.spec as { template: { metadata: { labels: Record<string, string> } } }).template
        .metadata.labels;
      const pod = `${base}-new-0`;
      const podPath = `${k8s.url}/api/v1/namespaces/${NS}/pods`;
      const created = await fetch(podPath, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: pod, namespace: NS, labels },
          spec: { containers: [{ name: "app", image: "registry.example.com/shop:missing" }] },
        }),
      });
      assert.equal(created.status, 201);
      const status = await fetch(`${podPath}/${pod}/status`, {
        method: "PATCH",
        headers: { "content-type": "application/merge-patch+json" },
        body: JSON.stringify({
          status: {
            phase: "Pending",
            containerStatuses: [
              {
                name: "app",
                image: "registry.example.com/shop:missing",
                imageID: "",
                ready: false,
                restartCount: 0,
                state: { waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } },
              },
            ],
          },
        }),
      });
      assert.equal(status.status, 200);
      const failed = await eventually("DEPLOY_FAILED", async () => {
        const r = await revision(rev);
        return r.status === "DEPLOY_FAILED" ? r : undefined;
      });
      assert.match(String(failed.status_message), /image pull failure \(ImagePullBackOff\)/);
      const dep = (
        await api<{ active_revision_id: string; status: string }>("GET", `/v2/deployments/${deploymentId}`)
      ).body;
      assert.equal(dep.active_revision_id, before);
      await eventually(
        "the cluster back on the serving revision",
        () => apiDeployment()?.metadata.labels?.["slipway.dev/revision-id"] === before,
      );
    });

    it("listener stopped: UNKNOWN; started again: READY", async () => {
      await listener?.stop();
      await eventually(
        "UNKNOWN",
        async () => (await api<Obj>("GET", `/v2/deployments/${deploymentId}`)).body.status === "UNKNOWN",
      );
      const l = (await api<{ resources: { status: string }[] }>("GET", "/v2/listeners?limit=10")).body
        .resources[0];
      assert.equal(l?.status, "DISCONNECTED");
      await startListener();
      await eventually(
        "READY",
        async () => (await api<Obj>("GET", `/v2/deployments/${deploymentId}`)).body.status === "READY",
      );
    });

    it("delete: every object of the deployment is pruned", async () => {
      const res = await api("DELETE", `/v2/deployments/${deploymentId}`);
      assert.equal(res.status, 204);
      await eventually(
        "pruned",
        () =>
          deploymentsOf().length === 0 &&
          k8s.store.list(resource("", "v1", "services"), NS, {
            labelSelector: `slipway.dev/deployment-id=${deploymentId}`,
            fieldSelector: null,
          }).length === 0,
      );
      await eventually(
        "404",
        async () => (await api("GET", `/v2/deployments/${deploymentId}`)).status === 404,
      );
    });
  });
}

function resource(group: string, version: string, plural: string) {
  const t = findResource(group, version, plural);
  assert.ok(t);
  return t;
}
