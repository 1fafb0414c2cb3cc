// The stand-in Kubernetes API server (test/helpers/k8s-standin) driven by the real kubectl: it
// speaks the wire format the listener's client relies on (discovery, server-side apply with field
// managers and dry-run, validation, label selectors, watch, the status subresource, delete).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type StandIn, startK8sStandIn } from "../helpers/k8s-standin/server.ts";
import { kubectl } from "../helpers/kubectl.ts";

const deployment = (replicas: number | string, image = "nginx:1.27") => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: front}
spec:
  replicas: ${JSON.stringify(replicas)}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "${image}"}]
`;

const configMap = (name: string, tier: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}, labels: {tier: ${tier}}}
data: {a: "1"}
`;

describe("stand-in Kubernetes API server, driven by kubectl", () => {
  let k8s: StandIn;
  let dir: string;
  let kc: string;
  before(async () => {
    k8s = await startK8sStandIn({ namespaces: ["team-a"] });
    dir = mkdtempSync(join(tmpdir(), "slipway-kubectl-"));
    kc = k8s.kubeconfig(dir, "team-a");
  });
  after(async () => {
    await k8s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const json = async (args: string[]) => {
    const r = await kubectl(kc, [...args, "-o", "json"]);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout);
  };

  it("apply --server-side creates, records the field manager, and re-applies in place", async () => {
    const r = await kubectl(kc, ["apply", "--server-side", "-f", "-"], deployment(2));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /deployment.apps\/web serverside-applied/);
    const obj = await json(["get", "deployment", "web", "--show-managed-fields"]);
    assert.equal(obj.metadata.namespace, "team-a");
    assert.equal(obj.metadata.generation, 1);
    assert.deepEqual(
      obj.metadata.managedFields.map((m: { manager: string; operation: string }) => [m.manager, m.operation]),
      [["kubectl", "Apply"]],
    );
    assert.ok(obj.metadata.managedFields[0].fieldsV1["f:spec"]["f:replicas"]);
    assert.equal((await kubectl(kc, ["apply", "--server-side", "-f", "-"], deployment(3))).code, 0);
    const again = await json(["get", "deployment", "web"]);
    assert.equal(again.spec.replicas, 3);
    assert.equal(again.metadata.generation, 2);
    assert.equal(again.metadata.uid, obj.metadata.uid);
  });

  it("another manager changing an owned field conflicts unless it forces", async () => {
    await kubectl(kc, ["apply", "--server-side", "-f", "-"], deployment(3));
    const clash = await kubectl(
      kc,
      ["apply", "--server-side", "--field-manager", "other", "-f", "-"],
      deployment(5),
    );
    assert.notEqual(clash.code, 0);
    assert.match(clash.stderr, /conflict/i);
    assert.match(clash.stderr, /\.spec\.replicas/);
    assert.equal((await json(["get", "deployment", "web"])).spec.replicas, 3);
    const forced = await kubectl(
      kc,
      ["apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", "-"],
      deployment(5),
    );
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal((await json(["get", "deployment", "web"])).spec.replicas, 5);
    // Give the fields back so the other tests see one manager.
    await kubectl(kc, ["apply", "--server-side", "--force-conflicts", "-f", "-"], deployment(3));
  });

  it("--dry-run=server answers with the result and stores nothing", async () => {
    await kubectl(kc, ["apply", "--server-side", "-f", "-"], deployment(3));
    const r = await kubectl(
      kc,
      ["apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-"],
      deployment(7),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).spec.replicas, 7);
    assert.equal((await json(["get", "deployment", "web"])).spec.replicas, 3);
    assert.ok(
      k8s.requests.some(
        (l) =>
          l.startsWith("PATCH /apis/apps/v1/namespaces/team-a/deployments/web") && l.includes("dryRun=All"),
      ),
    );
  });

  it("an invalid object is refused by the server with the schema's reason", async () => {
    const r = await kubectl(kc, ["apply", "--server-side", "-f", "-"], deployment("two"));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /replicas/);
  });

  it("a changed selector is refused: it is immutable", async () => {
    await kubectl(kc, ["apply", "--server-side", "-f", "-"], deployment(3));
    const r = await kubectl(
      kc,
      ["apply", "--server-side", "-f", "-"],
      deployment(3).replaceAll("{app: web}", "{app: web2}"),
    );
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /immutable/);
  });

  it("get with label selectors", async () => {
    for (const [name, tier] of [
      ["front-config", "front"],
      ["back-config", "back"],
    ]) {
      assert.equal(
        (await kubectl(kc, ["apply", "--server-side", "-f", "-"], configMap(name ?? "", tier ?? ""))).code,
        0,
      );
    }
    const names = async (selector: string) =>
      (await json(["get", "configmaps", "-l", selector])).items
        .map((i: { metadata: { name: string } }) => i.metadata.name)
        .sort();
    assert.deepEqual(await names("tier=front"), ["front-config"]);
    assert.deepEqual(await names("tier!=front"), ["back-config"]);
    assert.deepEqual(await names("tier in (front,back)"), ["back-config", "front-config"]);
    assert.deepEqual(await names("!tier"), []);
  });

  it("rollout status watches until the kubelet (this test) reports the rollout done", async () => {
    await kubectl(kc, ["apply", "--server-side", "-f", "-"], deployment(3, "nginx:1.28"));
    const obj = await json(["get", "deployment", "web"]);
    const waiting = kubectl(kc, ["rollout", "status", "deployment/web", "--timeout=20s"]);
    // Written through the status subresource, as the deployment controller does.
    const res = await fetch(`${k8s.url}/apis/apps/v1/namespaces/team-a/deployments/web/status`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({
        status: {
          observedGeneration: obj.metadata.generation,
          replicas: 3,
          updatedReplicas: 3,
          readyReplicas: 3,
          availableReplicas: 3,
          conditions: [{ type: "Available", status: "True", reason: "MinimumReplicasAvailable" }],
        },
      }),
    });
    assert.equal(res.status, 200);
    const r = await waiting;
    assert.equal(r.code, 0, r.stderr + r.stdout + k8s.requests.slice(-6).join("\n"));
    assert.match(r.stdout, /successfully rolled out/);
    assert.ok(k8s.requests.some((l) => l.includes("/deployments") && l.includes("watch=true")));
  });

  it("a write to the object keeps the status; the status subresource changes only status", async () => {
    const before = await json(["get", "deployment", "web"]);
    await kubectl(kc, ["apply", "--server-side", "-f", "-"], deployment(4, "nginx:1.28"));
    const after = await json(["get", "deployment", "web"]);
    assert.deepEqual(after.status, before.status);
    assert.equal(after.metadata.generation, before.metadata.generation + 1);
  });

  it("delete removes the object: get answers NotFound", async () => {
    const r = await kubectl(kc, ["delete", "deployment", "web"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /deployment.apps "web" deleted/);
    const gone = await kubectl(kc, ["get", "deployment", "web"]);
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /NotFound/);
  });
});
