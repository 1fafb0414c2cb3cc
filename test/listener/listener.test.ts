// The listener against the strict stand-in with its pod controller (pods from templates, PVCs,
// workload status, Pod Security "restricted" on the app namespace) and RBAC from
// deploy/kubernetes/listener-rbac.yaml: a real `slipway serve` and a real `slipway listener`.
// Each case here failed against the listener and manifests before issue 29.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { eventually } from "../helpers/eventually.ts";
import { type K8sStack, NS, type Obj, resource, startK8sStack } from "../helpers/k8s-stack.ts";

const FORBIDDEN_NS = "aaa-no-grant";
const HEALTH_PORT = 20_000 + Math.floor(Math.random() * 20_000);
const PG = "docker.io/library/postgres:16";
const q = { labelSelector: null, fieldSelector: null };

describe("the listener on a strict cluster", () => {
  let stack: K8sStack;
  before(async () => {
    stack = await startK8sStack("pglite", {
      standIn: {
        namespaces: [
          { name: NS, labels: { "pod-security.kubernetes.io/enforce": "restricted" } },
          FORBIDDEN_NS,
        ],
        // The database crashes once before it is ready; images named *crash* never start.
        controller: {
          behaviour: (image) => (image === PG ? "crash-once" : image.includes("crash") ? "crash" : "ready"),
        },
      },
      rbacNamespaces: [NS],
      // The namespace it may not touch first: pruning there must not stop pruning in NS.
      listenerNamespaces: [FORBIDDEN_NS, NS],
      listenerArgs: ["--pod-security", "restricted", "--health-port", String(HEALTH_PORT)],
    });
  });
  after(async () => {
    await stack?.close();
  });

  const get = (plural: string, name: string, group = "", version = "v1") =>
    stack.k8s.store
      .list(resource(group, version, plural), NS, q)
      .find((o) => (o.metadata as Obj).name === name);

  async function create(name: string, spec: Obj, image = "registry.example.com/shop:1") {
    const res = await stack.api<{ id: string; latest_revision_id: string }>("POST", "/v2/deployments", {
      name,
      source: "external_docker",
      source_config: {
        listener_id: stack.listenerId,
        listener_config: { k8s_namespace: NS },
        resource_spec: spec,
      },
      source_revision_config: { image_uri: image },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return {
      id: res.body.id,
      base: `${name}-${res.body.id.slice(0, 8)}`,
      revision: res.body.latest_revision_id,
    };
  }

  async function revise(id: string, spec: Obj, image: string) {
    const res = await stack.api<{ latest_revision_id: string }>("PATCH", `/v2/deployments/${id}`, {
      source_config: { resource_spec: spec },
      source_revision_config: { image_uri: image },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.latest_revision_id;
  }

  const status = async (id: string, rev: string) =>
    (
      await stack.api<{ status: string; status_message?: string }>(
        "GET",
        `/v2/deployments/${id}/revisions/${rev}`,
      )
    ).body;

  async function settled(id: string, rev: string, want: "DEPLOYED" | "DEPLOY_FAILED") {
    return eventually(
      `revision ${rev} ${want}`,
      async () => {
        const s = await status(id, rev);
        if (s.status === (want === "DEPLOYED" ? "DEPLOY_FAILED" : "DEPLOYED"))
          throw new Error(`${s.status}: ${s.status_message}\n${stack.diagnostics()}`);
        return s.status === want ? s : undefined;
      },
      120_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${stack.diagnostics()}`);
    });
  }

  it("the health port: /healthz live, /readyz ready and naming the namespace it could not prune", async () => {
    const live = await eventually("/healthz", () =>
      fetch(`http://127.0.0.1:${HEALTH_PORT}/healthz`).then((r) => r.status === 200 || undefined),
    );
    assert.ok(live);
    const ready = await eventually("/readyz naming the 403", async () => {
      const r = await fetch(`http://127.0.0.1:${HEALTH_PORT}/readyz`);
      const text = await r.text();
      return r.status === 200 && text.includes(FORBIDDEN_NS) ? text : undefined;
    });
    assert.match(ready, /forbidden/);
    assert.equal((await fetch(`http://127.0.0.1:${HEALTH_PORT}/nope`)).status, 404);
  });

  it("restricted pods run; a new revision leaves Postgres and Redis alone, and their one crash fails nothing", async () => {
    const spec = { db_storage_gi: 1, redis_memory_mb: 64, cpu: 0.25 };
    const app = await create("shop", spec);
    await settled(app.id, app.revision, "DEPLOYED");
    const sts = get("statefulsets", `${app.base}-db`, "apps") as Obj;
    const redis = get("deployments", `${app.base}-redis`, "apps") as Obj;
    const dbPod = get("pods", `${app.base}-db-0`) as Obj;
    assert.ok(sts && redis && dbPod, stack.diagnostics());
    const rev2 = await revise(app.id, spec, "registry.example.com/shop:2");
    await settled(app.id, rev2, "DEPLOYED");
    const sts2 = get("statefulsets", `${app.base}-db`, "apps") as Obj;
    const redis2 = get("deployments", `${app.base}-redis`, "apps") as Obj;
    assert.equal(
      (sts2.metadata as Obj).generation,
      (sts.metadata as Obj).generation,
      "StatefulSet not rolled",
    );
    assert.equal(
      (redis2.metadata as Obj).generation,
      (redis.metadata as Obj).generation,
      "Redis not recreated",
    );
    assert.equal(((get("pods", `${app.base}-db-0`) as Obj).metadata as Obj).uid, (dbPod.metadata as Obj).uid);
  });

  it("an app Deployment deleted by hand is applied again (unchanged objects are otherwise not resent)", async () => {
    const app = await create("handedit", { cpu: 0.25 });
    await settled(app.id, app.revision, "DEPLOYED");
    stack.k8s.store.delete(resource("apps", "v1", "deployments"), NS, app.base, false);
    await eventually("the Deployment back", () => get("deployments", app.base, "apps"), 60_000).catch(
      (err: Error) => {
        throw new Error(`${err.message}\n${stack.diagnostics()}`);
      },
    );
  });

  it("fixed scale to autoscaling: the replicas are handed over to the HPA, not reset to 1", async () => {
    const app = await create("scaler", { min_scale: 3, max_scale: 3, cpu: 0.25 });
    await settled(app.id, app.revision, "DEPLOYED");
    const rev2 = await revise(
      app.id,
      { min_scale: 3, max_scale: 6, cpu: 0.25 },
      "registry.example.com/shop:2",
    );
    await eventually("the HPA", () => get("horizontalpodautoscalers", app.base, "autoscaling", "v2"));
    const dep = get("deployments", app.base, "apps") as Obj & { spec: { replicas: number } };
    assert.equal(dep.spec.replicas, 3, "spec.replicas after dropping it from the applied config");
    const owners = ((dep.metadata as Obj).managedFields as Obj[]).map((m) => m.manager);
    assert.ok(owners.includes("handover-to-hpa"), owners.join(", "));
    await settled(app.id, rev2, "DEPLOYED");
  });

  it("db_storage_gi grows the PVC; where the cluster cannot expand it, the revision fails with its reason", async () => {
    const app = await create("store", { db_storage_gi: 1, cpu: 0.25 });
    await settled(app.id, app.revision, "DEPLOYED");
    const pvcName = `data-${app.base}-db-0`;
    assert.ok(get("persistentvolumeclaims", pvcName), "the controller made the claim");
    const refused = await revise(app.id, { db_storage_gi: 2, cpu: 0.25 }, "registry.example.com/shop:1");
    const failed = await settled(app.id, refused, "DEPLOY_FAILED");
    assert.match(String(failed.status_message), /only dynamically provisioned pvc can be resized/);
    // A StorageClass that expands (the stand-in's annotation): the next increase is a PVC patch.
    stack.k8s.store.update(
      resource("", "v1", "persistentvolumeclaims"),
      NS,
      pvcName,
      { merge: { metadata: { annotations: { "standin/allow-volume-expansion": "true" } } } },
      "test",
      false,
      false,
    );
    const grown = await revise(app.id, { db_storage_gi: 3, cpu: 0.25 }, "registry.example.com/shop:1");
    await settled(app.id, grown, "DEPLOYED");
    const pvc = get("persistentvolumeclaims", pvcName) as {
      spec: { resources: { requests: { storage: string } } };
    };
    assert.equal(pvc.spec.resources.requests.storage, "3Gi");
    const sts = get("statefulsets", `${app.base}-db`, "apps") as { spec: { volumeClaimTemplates: Obj[] } };
    assert.match(
      JSON.stringify(sts.spec.volumeClaimTemplates),
      /"1Gi"/,
      "the claim template itself is unchanged",
    );
    const decrease = await stack.api("PATCH", `/v2/deployments/${app.id}`, {
      source_config: { resource_spec: { db_storage_gi: 2 } },
      source_revision_config: { image_uri: "registry.example.com/shop:1" },
    });
    assert.equal(decrease.status, 422);
  });

  it("a pod Pod Security refuses fails the revision with the admission's reason (ReplicaFailure)", async () => {
    const app = await create("privileged", {
      cpu: 0.25,
      sidecars: [{ name: "tool", image: "x:1", securityContext: { privileged: true } }],
    });
    const failed = await settled(app.id, app.revision, "DEPLOY_FAILED");
    assert.match(
      String(failed.status_message),
      /ReplicaFailure \(FailedCreate\).*violates PodSecurity "restricted:latest"/,
    );
  });

  it("deleting a deployment prunes everything of it, its volume and then its Secret, though another namespace answers 403", async () => {
    const app = await create("gone", { db_storage_gi: 1, cpu: 0.25 });
    await settled(app.id, app.revision, "DEPLOYED");
    assert.ok(get("persistentvolumeclaims", `data-${app.base}-db-0`));
    const del = await stack.api("DELETE", `/v2/deployments/${app.id}`);
    assert.ok(del.status < 300, JSON.stringify(del.body));
    await eventually(
      "everything of it pruned",
      () =>
        ["secrets", "services", "persistentvolumeclaims", "pods"].every(
          (p) =>
            !stack.k8s.store
              .list(resource("", "v1", p), NS, q)
              .some((o) => JSON.stringify(o).includes(app.base)),
        ) &&
        !stack.k8s.store
          .list(resource("apps", "v1", "statefulsets"), NS, q)
          .some((o) => JSON.stringify(o).includes(app.base)),
      120_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${stack.diagnostics()}`);
    });
    assert.ok(
      stack.k8s.requests.some((l) => l.includes(`/namespaces/${FORBIDDEN_NS}/`)),
      "the listener did try the other namespace",
    );
  });
});
