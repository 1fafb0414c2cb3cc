import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { manifestsFor } from "../../src/listener/manifests/index.ts";
import type { K8sObject } from "../../src/listener/manifests/types.ts";
import { validateManifest } from "../helpers/k8s-models.ts";
import { desired, FULL_SPEC, LISTENER_ID, manifestOptions } from "../helpers/listener-fixtures.ts";

const PASSWORDS = { database: "db-pass/word", cache: "cache-pass" };
type Obj = Record<string, unknown>;

function find(objects: K8sObject[], kind: string, name: string): Obj {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found, `${kind} ${name} in ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(", ")}`);
  return found as unknown as Obj;
}

/** A field by dotted path ("spec.template.spec"), array items by index. */
function at(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split(".")) {
    if (typeof cur !== "object" || cur === null) return undefined;
    cur = (cur as Obj)[part];
  }
  return cur;
}

function validateAll(objects: K8sObject[]): void {
  for (const o of objects) {
    assert.doesNotThrow(() => validateManifest(o), `${o.kind}/${o.metadata.name}`);
  }
}

const kinds = (objects: K8sObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`);

describe("manifests of a deployment", () => {
  it("a spec-less deployment: env Secret, Deployment, Service, Ingress, all valid", () => {
    const objects = manifestsFor(desired(), manifestOptions());
    validateAll(objects);
    assert.deepEqual(kinds(objects), [
      "Secret/shop-5f1e2d3c-env",
      "Deployment/shop-5f1e2d3c",
      "Service/shop-5f1e2d3c",
      "Ingress/shop-5f1e2d3c",
      "NetworkPolicy/shop-5f1e2d3c",
    ]);
    for (const o of objects) {
      assert.equal(o.metadata.namespace, "team-a");
      // Only the app's workload carries the revision: a new revision re-applies it alone.
      const revision = o.kind === "Deployment" ? "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d" : undefined;
      assert.deepEqual(
        { ...o.metadata.labels, "app.kubernetes.io/component": undefined },
        {
          "app.kubernetes.io/name": "shop",
          "app.kubernetes.io/instance": "shop-5f1e2d3c",
          "app.kubernetes.io/managed-by": "slipway",
          "app.kubernetes.io/component": undefined,
          "slipway.dev/deployment-id": "5f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
          ...(revision ? { "slipway.dev/revision-id": revision } : {}),
          "slipway.dev/listener-id": LISTENER_ID,
        },
      );
    }
    const next = manifestsFor(
      desired({ revision_id: "0f0e0d0c-0b0a-4908-8706-050403020100" }),
      manifestOptions(),
    );
    assert.deepEqual(
      next.filter((o, i) => JSON.stringify(o) !== JSON.stringify(objects[i])).map((o) => o.kind),
      ["Deployment"],
      "a new revision of the same spec and env changes its Deployment alone",
    );
    const secret = find(objects, "Secret", "shop-5f1e2d3c-env");
    assert.equal(Buffer.from(String(at(secret, "data.GREETING")), "base64").toString(), "hello");
    const dep = find(objects, "Deployment", "shop-5f1e2d3c");
    assert.equal(at(dep, "spec.replicas"), 1);
    assert.deepEqual(at(dep, "spec.strategy.rollingUpdate"), { maxUnavailable: 0, maxSurge: 1 });
    const app = (at(dep, "spec.template.spec.containers") as Obj[])[0];
    assert.equal(at(app, "readinessProbe.httpGet.path"), "/ok");
    assert.equal(at(app, "livenessProbe.httpGet.path"), "/ok");
    assert.deepEqual(at(app, "ports"), [{ name: "http", containerPort: 8080, protocol: "TCP" }]);
    assert.deepEqual(at(app, "envFrom"), [{ secretRef: { name: "shop-5f1e2d3c-env" } }]);
    const ingress = find(objects, "Ingress", "shop-5f1e2d3c");
    assert.equal(at(ingress, "spec.ingressClassName"), "nginx");
    assert.equal((at(ingress, "spec.rules") as Obj[])[0]?.host, "shop.apps.example.com");
  });

  it("every ResourceSpec field at once: HPA, PDB, queue workers, Postgres, Redis; all valid", () => {
    const objects = manifestsFor(desired({ resource_spec: FULL_SPEC }), manifestOptions(), PASSWORDS);
    validateAll(objects);
    assert.deepEqual(kinds(objects).sort(), [
      "Deployment/shop-5f1e2d3c",
      "Deployment/shop-5f1e2d3c-queue",
      "Deployment/shop-5f1e2d3c-redis",
      "HorizontalPodAutoscaler/shop-5f1e2d3c",
      "HorizontalPodAutoscaler/shop-5f1e2d3c-queue",
      "Ingress/shop-5f1e2d3c",
      "NetworkPolicy/shop-5f1e2d3c",
      "PodDisruptionBudget/shop-5f1e2d3c",
      "PodDisruptionBudget/shop-5f1e2d3c-queue",
      "Secret/shop-5f1e2d3c-db",
      "Secret/shop-5f1e2d3c-env",
      "Secret/shop-5f1e2d3c-redis",
      "Service/shop-5f1e2d3c",
      "Service/shop-5f1e2d3c-db",
      "Service/shop-5f1e2d3c-redis",
      "StatefulSet/shop-5f1e2d3c-db",
    ]);
    const dep = find(objects, "Deployment", "shop-5f1e2d3c");
    assert.equal(at(dep, "spec.replicas"), undefined, "the HPA owns the replica count");
    assert.equal(at(dep, "metadata.labels.team"), "payments");
    assert.equal(at(dep, "spec.template.metadata.labels.team"), "payments");
    assert.deepEqual(at(dep, "spec.template.metadata.annotations"), { "prometheus.io/scrape": "true" });
    const pod = at(dep, "spec.template.spec") as Obj;
    assert.equal(pod.serviceAccountName, "shop-runner");
    assert.deepEqual(pod.imagePullSecrets, [{ name: "regcred" }]);
    assert.deepEqual(pod.volumes, FULL_SPEC.volumes);
    const containers = pod.containers as Obj[];
    assert.deepEqual(
      containers.map((c) => c.name),
      ["app", "proxy"],
    );
    assert.deepEqual(
      (pod.initContainers as Obj[]).map((c) => [c.name, c.restartPolicy]),
      [
        ["migrate", undefined],
        ["log-shipper", "Always"],
      ],
    );
    // The ResourceSpec's container as given, under the security defaults (its own fields win).
    assert.deepEqual((pod.initContainers as Obj[])[0], {
      ...(FULL_SPEC.init_containers as Obj[])[0],
      securityContext: {
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
        runAsNonRoot: true,
      },
    });
    const app = containers[0];
    assert.deepEqual(app?.volumeMounts, FULL_SPEC.volume_mounts);
    assert.deepEqual(app?.resources, {
      requests: { cpu: "500m", memory: "512Mi" },
      limits: { cpu: "1000m", memory: "1024Mi" },
    });
    assert.deepEqual(
      (at(app, "env") as Obj[]).map((e) => [e.name, at(e, "valueFrom.secretKeyRef")]),
      [
        ["DATABASE_URI", { name: "shop-5f1e2d3c-db", key: "uri" }],
        ["POSTGRES_URI", { name: "shop-5f1e2d3c-db", key: "uri" }],
        ["REDIS_URI", { name: "shop-5f1e2d3c-redis", key: "uri" }],
      ],
    );
    const hpa = find(objects, "HorizontalPodAutoscaler", "shop-5f1e2d3c");
    assert.equal(at(hpa, "spec.minReplicas"), 2);
    assert.equal(at(hpa, "spec.maxReplicas"), 5);
    assert.deepEqual(
      (at(hpa, "spec.metrics") as Obj[]).map((m) => at(m, "resource.name")),
      ["cpu", "memory"],
    );
    const queue = find(objects, "Deployment", "shop-5f1e2d3c-queue");
    const worker = (at(queue, "spec.template.spec.containers") as Obj[])[0];
    assert.equal(worker?.readinessProbe, undefined, "queue workers serve no HTTP");
    assert.deepEqual(worker?.resources, {
      requests: { cpu: "200m", memory: "256Mi" },
      limits: { cpu: "400m", memory: "512Mi" },
    });
    assert.deepEqual(
      at(find(objects, "HorizontalPodAutoscaler", "shop-5f1e2d3c-queue"), "spec.maxReplicas"),
      3,
    );
    const sts = find(objects, "StatefulSet", "shop-5f1e2d3c-db");
    assert.equal(
      at((at(sts, "spec.volumeClaimTemplates") as Obj[])[0], "spec.resources.requests.storage"),
      "10Gi",
    );
    const pg = (at(sts, "spec.template.spec.containers") as Obj[])[0];
    assert.deepEqual(pg?.args, ["-c", "max_connections=200"]);
    assert.deepEqual(pg?.resources, {
      requests: { cpu: "1000m", memory: "1024Mi" },
      limits: { cpu: "2000m", memory: "2048Mi" },
    });
    const dbSecret = find(objects, "Secret", "shop-5f1e2d3c-db");
    assert.equal(
      Buffer.from(String(at(dbSecret, "data.uri")), "base64").toString(),
      "postgresql://app:db-pass%2Fword@shop-5f1e2d3c-db.team-a.svc:5432/app",
    );
    const redis = find(objects, "Deployment", "shop-5f1e2d3c-redis");
    const r = (at(redis, "spec.template.spec.containers") as Obj[])[0];
    assert.deepEqual(r?.resources, {
      requests: { cpu: "100m", memory: "128Mi" },
      limits: { cpu: "200m", memory: "128Mi" },
    });
  });

  it("registry credentials: a dockerconfigjson Secret, first among the pods' imagePullSecrets, for queue workers too", () => {
    const creds = { registry: "reg.example:5000", username: "slipway", password: "p.w:d", expires_at: null };
    const objects = manifestsFor(
      desired({
        registry_credentials: creds,
        resource_spec: { image_pull_secrets: [{ name: "regcred" }], queue_min_scale: 1 },
      }),
      manifestOptions(),
    );
    validateAll(objects);
    const pull = find(objects, "Secret", "shop-5f1e2d3c-registry");
    assert.equal(pull.type, "kubernetes.io/dockerconfigjson");
    const config = JSON.parse(
      Buffer.from(String((pull.data as Obj)[".dockerconfigjson"]), "base64").toString(),
    );
    assert.deepEqual(config, {
      auths: {
        "reg.example:5000": {
          username: "slipway",
          password: "p.w:d",
          auth: Buffer.from("slipway:p.w:d").toString("base64"),
        },
      },
    });
    for (const name of ["shop-5f1e2d3c", "shop-5f1e2d3c-queue"]) {
      assert.deepEqual(at(find(objects, "Deployment", name), "spec.template.spec.imagePullSecrets"), [
        { name: "shop-5f1e2d3c-registry" },
        { name: "regcred" },
      ]);
    }
    // Without credentials: no such Secret and only the spec's own pull secrets.
    const plain = manifestsFor(desired({ registry_credentials: null }), manifestOptions());
    assert.ok(!kinds(plain).includes("Secret/shop-5f1e2d3c-registry"));
    assert.equal(
      at(find(plain, "Deployment", "shop-5f1e2d3c"), "spec.template.spec.imagePullSecrets"),
      undefined,
    );
  });

  it("probes ask the desired health path on the named port", () => {
    const dep = find(
      manifestsFor(desired({ health_path: "/healthz" }), manifestOptions()),
      "Deployment",
      "shop-5f1e2d3c",
    );
    const app = (at(dep, "spec.template.spec.containers") as Obj[])[0];
    assert.deepEqual(at(app, "readinessProbe.httpGet"), { path: "/healthz", port: "http" });
    assert.deepEqual(at(app, "livenessProbe.httpGet"), { path: "/healthz", port: "http" });
  });

  it("secret_references become secretKeyRef entries", () => {
    const objects = manifestsFor(
      desired({ secret_references: [{ name: "STRIPE_KEY", secret_name: "payments", key: "stripe" }] }),
      manifestOptions(),
    );
    validateAll(objects);
    const app = (
      at(find(objects, "Deployment", "shop-5f1e2d3c"), "spec.template.spec.containers") as Obj[]
    )[0];
    assert.deepEqual(app?.env, [
      { name: "STRIPE_KEY", valueFrom: { secretKeyRef: { name: "payments", key: "stripe" } } },
    ]);
  });

  it("fixed scale above one: replicas set, a PDB, no HPA", () => {
    const objects = manifestsFor(
      desired({ resource_spec: { min_scale: 3, max_scale: 3 } }),
      manifestOptions(),
    );
    validateAll(objects);
    assert.equal(at(find(objects, "Deployment", "shop-5f1e2d3c"), "spec.replicas"), 3);
    find(objects, "PodDisruptionBudget", "shop-5f1e2d3c");
    assert.ok(!objects.some((o) => o.kind === "HorizontalPodAutoscaler"));
  });

  it("an HPA with cpu only when no memory request is set", () => {
    const objects = manifestsFor(
      desired({ resource_spec: { min_scale: 1, max_scale: 4, cpu: 0.25 } }),
      manifestOptions(),
    );
    validateAll(objects);
    const hpa = find(objects, "HorizontalPodAutoscaler", "shop-5f1e2d3c");
    assert.deepEqual(
      (at(hpa, "spec.metrics") as Obj[]).map((m) => at(m, "resource.name")),
      ["cpu"],
    );
  });

  it("Gateway API routing: an HTTPRoute on the named gateway", () => {
    const objects = manifestsFor(
      desired(),
      manifestOptions({ routing: { kind: "gateway", gatewayName: "public", gatewayNamespace: "gateways" } }),
    );
    validateAll(objects);
    const r = find(objects, "HTTPRoute", "shop-5f1e2d3c");
    assert.deepEqual(at(r, "spec.hostnames"), ["shop.apps.example.com"]);
    assert.equal(at((at(r, "spec.parentRefs") as Obj[])[0], "name"), "public");
    assert.equal(at((at(r, "spec.parentRefs") as Obj[])[0], "namespace"), "gateways");
    assert.ok(!objects.some((o) => o.kind === "Ingress"));
  });

  it("no route without a host or with routing off; an Ingress without class uses the cluster default", () => {
    assert.ok(!manifestsFor(desired({ host: "" }), manifestOptions()).some((o) => o.kind === "Ingress"));
    assert.ok(
      !manifestsFor(desired(), manifestOptions({ routing: { kind: "none" } })).some(
        (o) => o.kind === "Ingress",
      ),
    );
    const objects = manifestsFor(desired(), manifestOptions({ routing: { kind: "ingress" } }));
    validateAll(objects);
    assert.equal(at(find(objects, "Ingress", "shop-5f1e2d3c"), "spec.ingressClassName"), undefined);
  });

  it("each optional part alone, and a cpu of 0.1 in millicores", () => {
    for (const spec of [
      { queue_min_scale: 2 },
      { db_storage_gi: 5 },
      { redis_memory_mb: 64 },
      { cpu: 0.1 },
    ]) {
      const objects = manifestsFor(desired({ resource_spec: spec }), manifestOptions(), PASSWORDS);
      validateAll(objects);
    }
    const objects = manifestsFor(desired({ resource_spec: { cpu: 0.1 } }), manifestOptions());
    const app = (
      at(find(objects, "Deployment", "shop-5f1e2d3c"), "spec.template.spec.containers") as Obj[]
    )[0];
    // The limit the API stores with a request (twice it) is the one applied.
    assert.deepEqual(app?.resources, { requests: { cpu: "100m" }, limits: { cpu: "200m" } });
  });

  it("deployment_type as the local runtime applies it: prod runs at least 2 replicas", () => {
    const prod = manifestsFor(
      desired({ deployment_type: "prod", resource_spec: { cpu: 0.5 } }),
      manifestOptions(),
    );
    validateAll(prod);
    const hpa = find(prod, "HorizontalPodAutoscaler", "shop-5f1e2d3c");
    assert.deepEqual([at(hpa, "spec.minReplicas"), at(hpa, "spec.maxReplicas")], [2, 4]);
    find(prod, "PodDisruptionBudget", "shop-5f1e2d3c");
    const floor = manifestsFor(
      desired({ deployment_type: "prod", resource_spec: { min_scale: 1, max_scale: 1 } }),
      manifestOptions(),
    );
    assert.equal(at(find(floor, "Deployment", "shop-5f1e2d3c"), "spec.replicas"), 2, "prod's floor");
    const free = manifestsFor(desired({ deployment_type: "dev_free" }), manifestOptions());
    const dep = find(free, "Deployment", "shop-5f1e2d3c");
    assert.equal(at(dep, "spec.replicas"), 1, "no scale to zero on Kubernetes");
    const app = (at(dep, "spec.template.spec.containers") as Obj[])[0];
    assert.deepEqual(app?.resources, { limits: { memory: "256Mi" } }, "dev_free's memory limit");
    const unknown = manifestsFor(desired({ deployment_type: "later" }), manifestOptions());
    assert.equal(at(find(unknown, "Deployment", "shop-5f1e2d3c"), "spec.replicas"), 1, "as dev");
  });

  it("queue workers take the API processes' scale and resources where their own are not set", () => {
    const spec = { min_scale: 2, max_scale: 3, cpu: 0.5, cpu_limit: 1, memory_mb: 256, memory_limit_mb: 512 };
    const objects = manifestsFor(
      desired({ resource_spec: { ...spec, queue_min_scale: 1 } }),
      manifestOptions(),
    );
    validateAll(objects);
    const hpa = find(objects, "HorizontalPodAutoscaler", "shop-5f1e2d3c-queue");
    assert.deepEqual([at(hpa, "spec.minReplicas"), at(hpa, "spec.maxReplicas")], [1, 3]);
    const queue = find(objects, "Deployment", "shop-5f1e2d3c-queue");
    assert.deepEqual((at(queue, "spec.template.spec.containers") as Obj[])[0]?.resources, {
      requests: { cpu: "500m", memory: "256Mi" },
      limits: { cpu: "1000m", memory: "512Mi" },
    });
  });

  it("a database without a password is refused rather than applied open", () => {
    assert.throws(
      () => manifestsFor(desired({ resource_spec: { db_storage_gi: 1 } }), manifestOptions()),
      /password/,
    );
  });

  it("a 63-character name still gives DNS-label names of at most 63 characters", () => {
    const name = `a${"b".repeat(61)}c`;
    const objects = manifestsFor(desired({ name, resource_spec: FULL_SPEC }), manifestOptions(), PASSWORDS);
    validateAll(objects);
    for (const o of objects) assert.ok(o.metadata.name.length <= 63, o.metadata.name);
  });

  it("the selector is the same for two revisions (a Deployment's selector cannot change)", () => {
    const a = find(manifestsFor(desired(), manifestOptions()), "Deployment", "shop-5f1e2d3c");
    const b = find(
      manifestsFor(desired({ revision_id: "11111111-2222-4333-8444-555555555555" }), manifestOptions()),
      "Deployment",
      "shop-5f1e2d3c",
    );
    assert.deepEqual(at(a, "spec.selector"), at(b, "spec.selector"));
    assert.notDeepEqual(at(a, "spec.template.metadata.labels"), at(b, "spec.template.metadata.labels"));
  });

  it("the schema check rejects what the API server would (so the checks above can fail)", () => {
    const dep = find(manifestsFor(desired(), manifestOptions()), "Deployment", "shop-5f1e2d3c");
    const broken = structuredClone(dep);
    (broken.spec as Obj).replicas = "two";
    assert.throws(() => validateManifest(broken), /replicas/);
  });
});
