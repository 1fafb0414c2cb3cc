// After rollout (issue 29): a real `slipway serve` and `slipway listener` on the strict stand-in
// with its pod controller. Pods that crash-loop, cannot be scheduled or are refused by admission
// once a revision serves are reported by the listener (from its pod watch), listed by
// GET /v2/deployments/{id}/processes, shown by `slipway status`, and make one deployment.unhealthy
// event (then deployment.healthy when the pods are back).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { runCli } from "../helpers/cli.ts";
import { eventually } from "../helpers/eventually.ts";
import { type K8sStack, KEY, NS, type Obj, resource, startK8sStack } from "../helpers/k8s-stack.ts";
import type { Behaviour } from "../helpers/k8s-standin/controller.ts";
import { SseClient } from "../helpers/sse.ts";

interface Processes {
  resources: {
    id: string;
    type: string;
    state: string;
    restarts: number;
    reason?: string | null;
    revision_id: string;
  }[];
  health?: {
    serving: boolean;
    reason: string | null;
    unhealthy_since: string | null;
    unhealthy_reason: string | null;
  } | null;
}

const q = { labelSelector: null, fieldSelector: null };

describe("pods after rollout, on a strict cluster", () => {
  let stack: K8sStack;
  let events: SseClient;
  /** What each image's pods do now; the test changes it and pokes the controller. */
  const behaviours = new Map<string, Behaviour>();

  before(async () => {
    stack = await startK8sStack("pglite", {
      standIn: { controller: { behaviour: (image) => behaviours.get(image) ?? "ready" } },
      rbacNamespaces: [NS],
    });
    events = await SseClient.open(
      `${stack.url}/v2/events?types=deployment.unhealthy&types=deployment.healthy`,
      { "x-api-key": KEY },
    );
    assert.equal(events.status, 200);
  });
  after(async () => {
    events?.close();
    await stack?.close();
  });

  const fail = (err: Error): never => {
    throw new Error(`${err.message}\n${stack.diagnostics()}`);
  };

  async function deployed(name: string, image: string) {
    const res = await stack.api<{ id: string; latest_revision_id: string }>("POST", "/v2/deployments", {
      name,
      source: "external_docker",
      source_config: {
        listener_id: stack.listenerId,
        listener_config: { k8s_namespace: NS },
        resource_spec: { cpu: 0.25 },
      },
      source_revision_config: { image_uri: image },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const { id, latest_revision_id: revision } = res.body;
    await eventually(
      `${name} DEPLOYED`,
      async () =>
        (await stack.api<{ status: string }>("GET", `/v2/deployments/${id}/revisions/${revision}`)).body
          .status === "DEPLOYED" || undefined,
      120_000,
    ).catch(fail);
    return { id, revision, base: `${name}-${id.slice(0, 8)}` };
  }

  const processes = async (id: string) =>
    (await stack.api<Processes>("GET", `/v2/deployments/${id}/processes`)).body;

  /** Waits for the processes listing to show `ok`. */
  const until = (what: string, id: string, ok: (p: Processes) => boolean) =>
    eventually(
      what,
      async () => {
        const p = await processes(id);
        return ok(p) ? p : undefined;
      },
      60_000,
    ).catch(fail);

  /** The next health event of the deployment. */
  async function nextEvent(id: string): Promise<{ event: string; data: Record<string, unknown> }> {
    for (;;) {
      const e = await events.next(60_000);
      const data = (JSON.parse(e.data) as { data: Record<string, unknown> }).data;
      if (data.deployment_id === id) return { event: e.event, data };
    }
  }

  /** Deletes the deployment's app pods, as a node drain or an eviction does: the ReplicaSet makes new ones. */
  function evictPods(base: string) {
    for (const p of stack.k8s.store.list(resource("", "v1", "pods"), NS, q)) {
      const name = String((p.metadata as Obj).name);
      if (name.startsWith(`${base}-`) && !name.startsWith(`${base}-db`))
        stack.k8s.store.delete(resource("", "v1", "pods"), NS, name, false);
    }
  }

  it("a crash loop after rollout: reported with its reason, one deployment.unhealthy, then healthy again", async () => {
    const image = "registry.example.com/late-crash:1";
    const app = await deployed("latecrash", image);
    await until(
      "its pod serving",
      app.id,
      (p) => p.health?.serving === true && p.resources.some((r) => r.state === "running"),
    );

    behaviours.set(image, "crash");
    stack.k8s.controller?.poke();
    const shown = await until("the crash loop reported", app.id, (p) => p.health?.unhealthy_since != null);
    const [pod] = shown.resources;
    assert.ok(pod, JSON.stringify(shown));
    assert.equal(pod.state, "restarting");
    assert.equal(pod.type, "api");
    assert.equal(pod.revision_id, app.revision);
    assert.ok(pod.restarts > 0);
    assert.match(
      String(pod.reason),
      /^CrashLoopBackOff in container app: back-off 40s restarting failed container=app/,
    );
    assert.match(String(shown.health?.unhealthy_reason), /CrashLoopBackOff in container app/);

    const unhealthy = await nextEvent(app.id);
    assert.equal(unhealthy.event, "deployment.unhealthy");
    assert.equal(unhealthy.data.revision_id, app.revision);
    assert.match(String(unhealthy.data.reason), /CrashLoopBackOff/);

    const status = await runCli(["status", "latecrash"], {
      SLIPWAY_URL: stack.url,
      SLIPWAY_API_KEY: KEY,
      NO_COLOR: "1",
    });
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /health\s+UNHEALTHY since \S+: \S+: CrashLoopBackOff in container app/);
    const json = await runCli(["status", "latecrash", "--json"], {
      SLIPWAY_URL: stack.url,
      SLIPWAY_API_KEY: KEY,
    });
    const health = (
      JSON.parse(json.stdout) as { health: { serving: boolean; unhealthy_since: string | null } }
    ).health;
    assert.equal(health.serving, false);
    assert.equal(typeof health.unhealthy_since, "string");

    behaviours.set(image, "ready");
    stack.k8s.controller?.poke();
    const healthy = await nextEvent(app.id);
    assert.equal(healthy.event, "deployment.healthy");
    await until(
      "serving again",
      app.id,
      (p) => p.health?.serving === true && p.health.unhealthy_since === null,
    );
    const again = await runCli(["status", "latecrash"], {
      SLIPWAY_URL: stack.url,
      SLIPWAY_API_KEY: KEY,
      NO_COLOR: "1",
    });
    assert.match(again.stdout, /health\s+serving/);
  });

  it("an evicted pod whose replacement no node takes: unschedulable, with the scheduler's message", async () => {
    const image = "registry.example.com/late-unschedulable:1";
    const app = await deployed("nonode", image);
    await until("its pod serving", app.id, (p) => p.health?.serving === true);
    behaviours.set(image, "unschedulable");
    evictPods(app.base);
    const shown = await until(
      "the unschedulable pod reported",
      app.id,
      (p) => p.health?.unhealthy_since != null,
    );
    assert.equal(shown.resources[0]?.state, "starting");
    assert.equal(shown.resources[0]?.reason, "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.");
    const unhealthy = await nextEvent(app.id);
    assert.equal(unhealthy.event, "deployment.unhealthy");
    assert.match(String(unhealthy.data.reason), /Unschedulable: 0\/3 nodes are available/);
  });

  it("a replacement pod refused by Pod Security after rollout (the namespace became restricted): refused, with the admission's reason", async () => {
    const app = await deployed("refusedlater", "registry.example.com/late-refused:1");
    await until("its pod serving", app.id, (p) => p.health?.serving === true);
    // The operator labels the namespace "restricted"; the listener runs without --pod-security restricted.
    stack.k8s.store.update(
      resource("", "v1", "namespaces"),
      undefined,
      NS,
      { merge: { metadata: { labels: { "pod-security.kubernetes.io/enforce": "restricted" } } } },
      "test",
      false,
      false,
    );
    evictPods(app.base);
    const shown = await until("the refusal reported", app.id, (p) =>
      p.resources.some((r) => /PodSecurity/.test(r.reason ?? "")),
    );
    const refused = shown.resources.find((r) => /PodSecurity/.test(r.reason ?? ""));
    assert.equal(refused?.state, "stopped");
    assert.equal(refused?.id, app.base, "named after its Deployment: the pod never existed");
    assert.match(String(refused?.reason), /^FailedCreate: .*violates PodSecurity "restricted:latest"/);
    const unhealthy = await nextEvent(app.id);
    assert.equal(unhealthy.event, "deployment.unhealthy");
    assert.match(String(unhealthy.data.reason), /violates PodSecurity/);
  });
});
