// The stand-in behaves as a real API server where Slipway's listener depends on it, driven by the
// real kubectl: a field dropped from a server-side apply returns to its default, namespaces must
// exist, immutable fields are refused, RBAC comes from the stored Roles, /scale, Pod Security
// admission, and the pod controller's pods, claims and garbage collection.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { eventually } from "../helpers/eventually.ts";
import { grantListener, LISTENER_USER, resource } from "../helpers/k8s-stack.ts";
import { type StandIn, startK8sStandIn } from "../helpers/k8s-standin/server.ts";
import { kubectl } from "../helpers/kubectl.ts";
import { REPO_ROOT } from "../helpers/process.ts";

const deployment = (replicas?: number, extra = "") => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
${replicas === undefined ? "" : `  replicas: ${replicas}\n`}  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"${extra}}]
`;

const statefulSet = (storage: string) => `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Retain}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "postgres:16"}]
  volumeClaimTemplates:
    - metadata: {name: data, labels: {app: db}}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: ${storage}}}}
`;

describe("the stand-in is as strict as a real API server", () => {
  let k8s: StandIn;
  let dir: string;
  let admin: string;
  const q = { labelSelector: null, fieldSelector: null };
  before(async () => {
    k8s = await startK8sStandIn({
      namespaces: [
        "team-a",
        "other",
        { name: "locked", labels: { "pod-security.kubernetes.io/enforce": "restricted" } },
      ],
      users: { "sa-token": LISTENER_USER },
      controller: true,
    });
    dir = mkdtempSync(join(tmpdir(), "slipway-strict-"));
    admin = k8s.kubeconfig(join(mkdtempSync(join(dir, "a-")), ""), "team-a");
    grantListener(k8s, "team-a");
  });
  after(async () => {
    await k8s.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const apply = (kc: string, yaml: string, ...more: string[]) =>
    kubectl(kc, ["apply", "--server-side", "--field-manager=slipway", ...more, "-f", "-"], yaml);

  it("a field dropped from a server-side apply goes back to its default (replicas → 1)", async () => {
    assert.equal((await apply(admin, deployment(3))).code, 0);
    assert.equal((await apply(admin, deployment())).code, 0);
    const r = await kubectl(admin, ["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]);
    assert.equal(r.stdout, "1");
  });

  it("/scale reads and writes the replicas (kubectl scale)", async () => {
    const r = await kubectl(admin, ["scale", "deployment/web", "--replicas=4"]);
    assert.equal(r.code, 0, r.stderr);
    const got = await kubectl(admin, [
      "get",
      "--raw",
      "/apis/apps/v1/namespaces/team-a/deployments/web/scale",
    ]);
    assert.equal(JSON.parse(got.stdout).spec.replicas, 4);
  });

  it("a write into a namespace that does not exist is 404", async () => {
    const r = await kubectl(admin, ["-n", "nowhere", "apply", "--server-side", "-f", "-"], deployment(1));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /namespaces "nowhere" not found/);
  });

  it("immutable fields: a StatefulSet's claim templates, a selector; a PVC that cannot expand", async () => {
    assert.equal((await apply(admin, statefulSet("1Gi"))).code, 0);
    const r = await apply(admin, statefulSet("2Gi"));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /updates to statefulset spec for fields other than/);
    const claim = await eventually("the controller's claim", () =>
      k8s.store
        .list(resource("", "v1", "persistentvolumeclaims"), "team-a", q)
        .find((p) => (p.metadata as { name: string }).name === "data-db-0"),
    );
    assert.ok(claim);
    const grow = await kubectl(admin, [
      "patch",
      "persistentvolumeclaim",
      "data-db-0",
      "--type=merge",
      "-p",
      '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}',
    ]);
    assert.notEqual(grow.code, 0);
    assert.match(grow.stderr, /only dynamically provisioned pvc can be resized/);
    const sel = await apply(
      admin,
      deployment(1)
        .replace("{app: web}}\n  template", "{app: web2}}\n  template")
        .replace("labels: {app: web}", "labels: {app: web2}"),
      "--force-conflicts",
    );
    assert.match(sel.stderr, /field is immutable/);
  });

  it("deleting a StatefulSet whose policy says Delete takes its claims and pods with it", async () => {
    assert.equal((await kubectl(admin, ["delete", "statefulset", "db"])).code, 0);
    await eventually("claims and pods gone", () =>
      ["persistentvolumeclaims", "pods"].every(
        (p) =>
          !k8s.store
            .list(resource("", "v1", p), "team-a", q)
            .some(
              (o) =>
                String((o.metadata as { name: string }).name).startsWith("data-db") ||
                (o.metadata as { name: string }).name === "db-0",
            ),
      ),
    );
  });

  // kubectl sends no token over plain HTTP: the requests are made as client-node makes them.
  it("RBAC from deploy/kubernetes/listener-rbac.yaml: allowed in its namespace, 403 elsewhere and for what it does not grant", async () => {
    assert.match(
      readFileSync(join(REPO_ROOT, "deploy", "kubernetes", "listener-rbac.yaml"), "utf8"),
      /kind: Role/,
    );
    const as = (path: string, method = "GET", body?: unknown) =>
      fetch(`${k8s.url}${path}`, {
        method,
        headers: {
          authorization: "Bearer sa-token",
          ...(body ? { "content-type": "application/merge-patch+json" } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
      });
    assert.equal((await as("/apis/apps/v1/namespaces/team-a/deployments")).status, 200);
    assert.equal((await as("/api/v1/namespaces/team-a/pods?watch=true&timeoutSeconds=1")).status, 200);
    const elsewhere = await as("/api/v1/namespaces/other/secrets");
    assert.equal(elsewhere.status, 403);
    assert.match(
      ((await elsewhere.json()) as { message: string }).message,
      /secrets is forbidden: User "system:serviceaccount:slipway-system:slipway-listener" cannot list resource "secrets" in API group "" in the namespace "other"/,
    );
    assert.equal((await as("/api/v1/namespaces/team-a/configmaps")).status, 403, "not granted");
    const scale = await as("/apis/apps/v1/namespaces/team-a/deployments/web/scale", "PATCH", {
      spec: { replicas: 2 },
    });
    assert.equal(scale.status, 403, "deployments/scale is not granted");
    assert.equal((await as("/api/v1/namespaces/other/secrets", "GET")).status, 403);
    const admin = await fetch(`${k8s.url}/api/v1/namespaces/other/secrets`, {
      headers: { authorization: "Bearer x" },
    });
    assert.equal(admin.status, 200, "other tokens are cluster admins");
  });

  it("Pod Security: the controller's pods in a restricted namespace are refused, as ReplicaFailure", async () => {
    const r = await kubectl(admin, ["-n", "locked", "apply", "--server-side", "-f", "-"], deployment(1));
    assert.equal(r.code, 0, r.stderr);
    const failure = await eventually("ReplicaFailure", async () => {
      const got = await kubectl(admin, ["-n", "locked", "get", "deployment", "web", "-o", "json"]);
      const conditions = (JSON.parse(got.stdout).status?.conditions ?? []) as {
        type: string;
        message?: string;
      }[];
      return conditions.find((c) => c.type === "ReplicaFailure");
    });
    assert.match(
      String(failure.message),
      /violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false/,
    );
    const hardened = deployment(
      1,
      ", securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}",
    );
    assert.equal(
      (await kubectl(admin, ["-n", "locked", "apply", "--server-side", "-f", "-"], hardened)).code,
      0,
    );
    await eventually("a ready pod", () =>
      k8s.store
        .list(resource("", "v1", "pods"), "locked", q)
        .some((p) => JSON.stringify(p.status ?? {}).includes('"Ready","status":"True"')),
    );
  });
});
