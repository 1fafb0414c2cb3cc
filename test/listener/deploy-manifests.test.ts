// deploy/kubernetes/*.yaml: valid against the official schemas, accepted by an API server through
// kubectl, and the listener's Role grants what the listener does (and no more).
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { loadAllYaml } from "@kubernetes/client-node";
import { MANAGED_KINDS } from "../../src/listener/cluster.ts";
import { validateManifest } from "../helpers/k8s-models.ts";
import { type StandIn, startK8sStandIn } from "../helpers/k8s-standin/server.ts";
import { kubectl } from "../helpers/kubectl.ts";
import { REPO_ROOT } from "../helpers/process.ts";

const DIR = join(REPO_ROOT, "deploy", "kubernetes");
type Obj = Record<string, unknown> & { kind: string; metadata: { name: string } };

const docs = (): { file: string; obj: Obj }[] =>
  readdirSync(DIR)
    .filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml")
    .flatMap((file) =>
      (loadAllYaml(readFileSync(join(DIR, file), "utf8")) as Obj[]).map((obj) => ({ file, obj })),
    );

const find = (kind: string, name: string) => {
  const d = docs().find((x) => x.obj.kind === kind && x.obj.metadata.name === name);
  assert.ok(d, `${kind} ${name}`);
  return d.obj as unknown;
};

describe("deploy/kubernetes", () => {
  let k8s: StandIn;
  let dir: string;
  before(async () => {
    k8s = await startK8sStandIn();
    dir = mkdtempSync(join(tmpdir(), "slipway-deploy-"));
  });
  after(async () => {
    await k8s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("every document is valid against the official schemas", () => {
    const all = docs();
    assert.ok(all.length >= 8);
    for (const { file, obj } of all) assert.doesNotThrow(() => validateManifest(obj), `${file}: ${obj.kind}`);
  });

  it("the control plane: several replicas, probes on /ok, a grace period, a Service", () => {
    const dep = find("Deployment", "slipway") as {
      spec: {
        replicas: number;
        template: { spec: { terminationGracePeriodSeconds: number; containers: unknown[] } };
      };
    };
    const spec = dep.spec;
    assert.ok(spec.replicas > 1);
    const pod = spec.template.spec;
    assert.ok(pod.terminationGracePeriodSeconds >= 30);
    const c = pod.containers[0] as {
      readinessProbe: { httpGet: { path: string } };
      livenessProbe: { httpGet: { path: string } };
    };
    assert.equal(c.readinessProbe.httpGet.path, "/ok");
    assert.equal(c.livenessProbe.httpGet.path, "/ok");
    find("Service", "slipway");
  });

  it("the listener's Role grants exactly the verbs it uses on each kind it manages", () => {
    const role = find("Role", "slipway-listener") as {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    const grants = new Map<string, string[]>();
    for (const rule of role.rules) {
      for (const g of rule.apiGroups)
        for (const r of rule.resources) grants.set(`${g}/${r}`, [...rule.verbs].sort());
    }
    const apply = ["create", "delete", "get", "list", "patch"];
    const plural: Record<string, string> = {
      Ingress: "ingresses",
      HTTPRoute: "httproutes",
      HorizontalPodAutoscaler: "horizontalpodautoscalers",
      PodDisruptionBudget: "poddisruptionbudgets",
      Deployment: "deployments",
      StatefulSet: "statefulsets",
      Service: "services",
      Secret: "secrets",
      NetworkPolicy: "networkpolicies",
    };
    const expected = new Map<string, string[]>([
      ["/pods", ["get", "list", "watch"]],
      ["/events", ["list", "watch"]],
      // Made by the StatefulSet controller: never created, only grown, found and deleted.
      ["/persistentvolumeclaims", ["delete", "get", "list", "patch"]],
    ]);
    for (const k of MANAGED_KINDS) {
      if (k.kind === "PersistentVolumeClaim") continue;
      const group = k.apiVersion.includes("/") ? (k.apiVersion.split("/")[0] ?? "") : "";
      const verbs = k.kind === "Deployment" ? [...apply, "watch"].sort() : apply;
      expected.set(`${group}/${plural[k.kind]}`, verbs);
    }
    assert.deepEqual(new Map([...grants].sort()), new Map([...expected].sort()));
  });

  it("the kustomize base applies from nothing with real kubectl, in the documented order", async () => {
    const kc = k8s.kubeconfig(dir);
    const r = await kubectl(kc, ["apply", "--server-side", "-k", DIR]);
    assert.equal(r.code, 0, r.stderr);
    // Then the Secrets the docs make, in the namespace the base made.
    for (const [name, literals] of [
      ["slipway", ["--from-literal=database-url=postgres://db/slipway", "--from-literal=master-key=a2V5"]],
      ["slipway-listener", ["--from-literal=listener-id=x", "--from-literal=api-key=y"]],
    ] as const) {
      // As docs/kubernetes.md makes them: rendered by kubectl, applied server-side (re-runnable).
      const made = await kubectl(kc, [
        ...["-n", "slipway-system", "create", "secret", "generic", name, ...literals],
        ...["--dry-run=client", "-o", "yaml"],
      ]);
      assert.equal(made.code, 0, made.stderr);
      const s = await kubectl(kc, ["apply", "--server-side", "-f", "-"], made.stdout);
      assert.equal(s.code, 0, s.stderr);
    }
    const got = await kubectl(kc, ["get", "deployments,ingresses,namespaces", "-A", "-o", "name"]);
    assert.equal(got.code, 0, got.stderr);
    const names = got.stdout.trim().split("\n");
    for (const want of [
      "deployment.apps/slipway",
      "deployment.apps/slipway-listener",
      "ingress.networking.k8s.io/slipway",
      "namespace/apps",
      "namespace/slipway-system",
    ])
      assert.ok(names.includes(want), `${want} in ${names.join(", ")}`);
  });

  it("every file of the base is in kustomization.yaml, namespaces first", () => {
    const k = readFileSync(join(DIR, "kustomization.yaml"), "utf8");
    const listed = [...k.matchAll(/^\s+- (\S+\.yaml)$/gm)].map((m) => m[1]);
    const files = readdirSync(DIR).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
    assert.deepEqual([...listed].sort(), files.sort());
    assert.equal(listed[0], "namespaces.yaml");
  });

  it("the listener has liveness and readiness probes on its health port; the control plane an Ingress and its apps domain", () => {
    const listener = find("Deployment", "slipway-listener") as {
      spec: {
        template: {
          spec: { containers: { args: string[]; livenessProbe?: unknown; readinessProbe?: unknown }[] };
        };
      };
    };
    const c = listener.spec.template.spec.containers[0];
    assert.ok(c?.livenessProbe && c.readinessProbe);
    assert.ok(c.args.includes("--health-port"));
    const cp = JSON.stringify(find("Deployment", "slipway"));
    assert.match(cp, /SLIPWAY_APPS_DOMAIN/);
    assert.doesNotMatch(cp, /"sleep":\{"seconds"/, "preStop sleep action needs Kubernetes 1.30");
  });
});
