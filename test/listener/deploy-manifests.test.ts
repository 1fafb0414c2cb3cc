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
    .filter((f) => f.endsWith(".yaml"))
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
    };
    const expected = new Map<string, string[]>([["/pods", ["get", "list"]]]);
    for (const k of MANAGED_KINDS) {
      const group = k.apiVersion.includes("/") ? (k.apiVersion.split("/")[0] ?? "") : "";
      const verbs = k.kind === "Deployment" ? [...apply, "watch"].sort() : apply;
      expected.set(`${group}/${plural[k.kind]}`, verbs);
    }
    assert.deepEqual(new Map([...grants].sort()), new Map([...expected].sort()));
  });

  it("kubectl apply --server-side accepts every file", async () => {
    const kc = k8s.kubeconfig(dir);
    for (const file of readdirSync(DIR).filter((f) => f.endsWith(".yaml"))) {
      const r = await kubectl(kc, ["apply", "--server-side", "-f", join(DIR, file)]);
      assert.equal(r.code, 0, `${file}: ${r.stderr}`);
    }
    const r = await kubectl(kc, ["get", "deployments", "-A", "-o", "name"]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split("\n").sort(), [
      "deployment.apps/slipway",
      "deployment.apps/slipway-listener",
    ]);
  });
});
