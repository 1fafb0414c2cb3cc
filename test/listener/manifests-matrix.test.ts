// Every object the listener renders, over names of 1, 40, 41, 52 and 63 characters and one ending
// in '-', times spec variants: valid against the official schemas (kubernetes-models) and against
// the API server's own rules and its controllers' derived names (test/helpers/k8s-standin/rules.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { manifestsFor } from "../../src/listener/manifests/index.ts";
import type { K8sObject } from "../../src/listener/manifests/types.ts";
import { validateManifest } from "../helpers/k8s-models.ts";
import { apiServerRefusals, controllerRefusals } from "../helpers/k8s-standin/rules.ts";
import { desired, FULL_SPEC, manifestOptions } from "../helpers/listener-fixtures.ts";

type Obj = Record<string, unknown>;
const PASSWORDS = { database: "db", cache: "cache" };

/** A name of `n` characters that looks like a user's (letters and dashes, no dash at the end). */
const nameOf = (n: number) => `s${"hop-app-".repeat(10)}`.slice(0, n - 1).replace(/-$/, "x") + "z";
const NAMES = [nameOf(1).slice(0, 1), nameOf(40), nameOf(41), nameOf(52), nameOf(63), "shop-with-dash-"];

const SPECS: Record<string, { type?: string; spec: Obj }> = {
  none: { spec: {} },
  full: { spec: FULL_SPEC },
  prod: { type: "prod", spec: { cpu: 0.5 } },
  "prod without requests": { type: "prod", spec: {} },
  "database only": { spec: { db_storage_gi: 3 } },
  "cache only": { spec: { redis_memory_mb: 64 } },
  "scaling with a sidecar without requests": {
    spec: { min_scale: 1, max_scale: 3, cpu: 0.5, memory_mb: 256, sidecars: [{ name: "s", image: "x:1" }] },
  },
};

const at = (o: unknown, path: string): unknown =>
  path
    .split(".")
    .reduce<unknown>((cur, p) => (cur && typeof cur === "object" ? (cur as Obj)[p] : undefined), o);

/** The HPA's metrics can be computed: every container it measures requests each metric's resource. */
function hpaProblems(objects: K8sObject[]): string[] {
  const out: string[] = [];
  for (const hpa of objects.filter((o) => o.kind === "HorizontalPodAutoscaler")) {
    const target = objects.find(
      (o) => o.kind === "Deployment" && o.metadata.name === at(hpa, "spec.scaleTargetRef.name"),
    );
    if (!target) {
      out.push(`${hpa.metadata.name}: no target`);
      continue;
    }
    if (at(target, "spec.replicas") !== undefined)
      out.push(`${target.metadata.name}: replicas set beside an HPA`);
    const pod = at(target, "spec.template.spec") as Obj;
    const containers = [
      ...((pod.containers as Obj[]) ?? []),
      ...(((pod.initContainers as Obj[]) ?? []).filter((c) => c.restartPolicy === "Always") as Obj[]),
    ];
    const metrics = (at(hpa, "spec.metrics") as Obj[] | undefined) ?? [];
    if (metrics.length === 0) out.push(`${hpa.metadata.name}: no metrics (the HPA falls back to cpu)`);
    for (const m of metrics) {
      const resource = String(at(m, "resource.name"));
      for (const c of containers) {
        if (at(c, `resources.requests.${resource}`) === undefined)
          out.push(`${hpa.metadata.name}: missing request for ${resource} in container ${String(c.name)}`);
      }
    }
  }
  return out;
}

describe("rendered objects over names and specs", () => {
  for (const name of NAMES) {
    for (const [variant, { type, spec }] of Object.entries(SPECS)) {
      it(`${name.length}-character name "${name}", ${variant}`, () => {
        const d = desired({
          name,
          host: `${name}.apps.example.com`,
          resource_spec: spec,
          deployment_type: type ?? "dev",
          workspace_id: "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
        });
        for (const routing of [
          { kind: "ingress" as const },
          { kind: "gateway" as const, gatewayName: "public" },
        ]) {
          const objects = manifestsFor(d, manifestOptions({ routing }), PASSWORDS);
          const problems: string[] = [];
          for (const o of objects) {
            try {
              validateManifest(o);
            } catch (err) {
              problems.push(
                `${o.kind}/${o.metadata.name}: schema: ${err instanceof Error ? err.message : ""}`,
              );
            }
            for (const p of [...apiServerRefusals(o), ...controllerRefusals(o)])
              problems.push(`${o.kind}/${o.metadata.name}: ${p}`);
          }
          problems.push(...hpaProblems(objects));
          assert.deepEqual(problems, []);
          const keys = new Set(objects.map((o) => `${o.kind}/${o.metadata.name}`));
          assert.equal(keys.size, objects.length, "no two objects of a kind share a name");
        }
      });
    }
  }

  it("the rules catch what they are for (so the matrix can fail)", () => {
    const base = desired({ name: nameOf(63), resource_spec: { db_storage_gi: 1 } });
    const objects = manifestsFor(base, manifestOptions(), PASSWORDS);
    const sts = objects.find((o) => o.kind === "StatefulSet");
    assert.ok(sts);
    const long = { ...sts, metadata: { ...sts.metadata, name: `${"x".repeat(53)}` } };
    assert.equal(controllerRefusals(long).length, 1);
    assert.equal(
      apiServerRefusals({ ...sts, metadata: { ...sts.metadata, labels: { "a/b/c": "x" } } }).length,
      1,
    );
    assert.equal(apiServerRefusals({ ...sts, metadata: { ...sts.metadata, labels: { a: "x-" } } }).length, 1);
    const dep = objects.find((o) => o.kind === "Deployment") as K8sObject;
    const pod = at(dep, "spec.template.spec") as Obj;
    const over = structuredClone(dep);
    ((at(over, "spec.template.spec") as Obj).containers as Obj[])[0] = {
      ...(pod.containers as Obj[])[0],
      resources: { requests: { cpu: "2" }, limits: { cpu: "1000m" } },
    };
    assert.equal(apiServerRefusals(over).length, 1);
    const hpaObjects = manifestsFor(
      desired({ resource_spec: { min_scale: 1, max_scale: 3, cpu: 0.5 } }),
      manifestOptions(),
    );
    const noRequest = hpaObjects.map((o) => {
      if (o.kind !== "Deployment") return o;
      const c = structuredClone(o);
      ((at(c, "spec.template.spec") as Obj).containers as Obj[]).push({ name: "bare", image: "x:1" });
      return c;
    });
    assert.equal(hpaProblems(noRequest).length, 1);
  });

  it("two revisions render identical database and Redis objects", () => {
    const spec = { db_storage_gi: 2, redis_memory_mb: 64, cpu: 0.5 };
    const one = manifestsFor(desired({ resource_spec: spec }), manifestOptions(), PASSWORDS);
    const two = manifestsFor(
      desired({ resource_spec: spec, revision_id: "0f0e0d0c-0b0a-4908-8706-050403020100", image: "x:2" }),
      manifestOptions(),
      PASSWORDS,
    );
    const parts = (objects: K8sObject[]) =>
      objects.filter((o) =>
        ["database", "cache"].includes(String(o.metadata.labels?.["app.kubernetes.io/component"])),
      );
    assert.equal(parts(one).length, 6, "Secret, Service and workload of each");
    assert.deepEqual(parts(two), parts(one));
    const app = (objects: K8sObject[]) =>
      objects.find((o) => o.kind === "Deployment" && o.metadata.name === "shop-5f1e2d3c");
    assert.notDeepEqual(app(two), app(one), "the app's own Deployment does change");
  });

  it("the database StatefulSet's name is at most 52 characters; other names are unchanged", () => {
    const id8 = "5f1e2d3c";
    for (const name of NAMES) {
      const objects = manifestsFor(
        desired({ name, resource_spec: { db_storage_gi: 1 } }),
        manifestOptions(),
        PASSWORDS,
      );
      const sts = objects.find((o) => o.kind === "StatefulSet");
      assert.ok(sts && sts.metadata.name.length <= 52, sts?.metadata.name);
      const base = objects.find((o) => o.kind === "Deployment")?.metadata.name ?? "";
      assert.ok(base.endsWith(`-${id8}`));
      if (name.length <= 40) assert.equal(sts.metadata.name, `${base}-db`, "short names keep <base>-db");
      assert.ok(objects.some((o) => o.kind === "Service" && o.metadata.name === `${base}-db`));
    }
  });
});
