// A real `slipway serve` (control plane, reconciler on) and a real `slipway listener` on the stand-in
// Kubernetes API, for the end-to-end suites that play the deployment controller and the kubelet by
// writing Deployment and Pod status.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAllYaml } from "@kubernetes/client-node";
import { createTestDatabase, type DbKind } from "./databases.ts";
import { findResource, type ResourceType } from "./k8s-standin/resources.ts";
import { type StandIn, type StandInOptions, startK8sStandIn } from "./k8s-standin/server.ts";
import { REPO_ROOT, runSlipway, type SlipwayProcess } from "./process.ts";

/** The control plane's bootstrap admin key (for clients other than `api`: the CLI, an event stream). */
export const KEY = "e2e-bootstrap-key-0123456789";
export const NS = "apps";
export type Obj = Record<string, unknown>;
export type Labelled = Obj & {
  metadata: { name: string; generation?: number; labels?: Record<string, string> };
  spec: { template: { metadata: { labels: Record<string, string> }; spec: { containers: Obj[] } } };
};

export function resource(group: string, version: string, plural: string): ResourceType {
  const t = findResource(group, version, plural);
  assert.ok(t);
  return t;
}

export interface K8sStack {
  k8s: StandIn;
  /** The control plane's base URL. */
  url: string;
  listenerId: string;
  api<T = Obj>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  startListener(): Promise<void>;
  stopListener(): Promise<void>;
  /** The listener's output and the last cluster requests, for failure messages. */
  diagnostics(): string;
  close(): Promise<void>;
}

export interface K8sStackOptions {
  /** More settings of the control plane (a registry, say). */
  env?: Record<string, string>;
  /** The control plane's port, when something must know it before it starts; default any. */
  port?: number;
  /** More of the stand-in: its pod controller, namespaces and their labels (NS always exists). */
  standIn?: StandInOptions;
  /** More arguments of `slipway listener`. */
  listenerArgs?: string[];
  /**
   * The listener acts as its service account, authorized by deploy/kubernetes/listener-rbac.yaml
   * applied in each of these namespaces (default: as a cluster admin).
   */
  rbacNamespaces?: string[];
  /** The listener's compute_config.k8s_namespaces (default [NS]). */
  listenerNamespaces?: string[];
}

export const LISTENER_USER = "system:serviceaccount:slipway-system:slipway-listener";
const LISTENER_TOKEN = "listener-sa-token";

/** deploy/kubernetes/listener-rbac.yaml's Role and RoleBinding, in `namespace`, into the stand-in. */
export function grantListener(k8s: StandIn, namespace: string): void {
  const text = readFileSync(join(REPO_ROOT, "deploy", "kubernetes", "listener-rbac.yaml"), "utf8");
  for (const doc of loadAllYaml(text) as Obj[]) {
    const meta = { ...(doc.metadata as Obj), namespace };
    const plural = doc.kind === "Role" ? "roles" : "rolebindings";
    k8s.store.create(
      resource("rbac.authorization.k8s.io", "v1", plural),
      namespace,
      { ...doc, metadata: meta },
      "test",
      false,
    );
  }
}

/** The stand-in cluster, the control plane on a `kind` database, a k8s listener for NS, started. */
export async function startK8sStack(kind: DbKind, opts: K8sStackOptions = {}): Promise<K8sStack> {
  const k8s = await startK8sStandIn({
    ...opts.standIn,
    namespaces: [
      ...(opts.standIn?.namespaces?.some((n) => (typeof n === "string" ? n : n.name) === NS) ? [] : [NS]),
      ...(opts.standIn?.namespaces ?? []),
    ],
    users: { [LISTENER_TOKEN]: LISTENER_USER, ...opts.standIn?.users },
  });
  for (const ns of opts.rbacNamespaces ?? []) grantListener(k8s, ns);
  const dir = mkdtempSync(join(tmpdir(), "slipway-e2e-k8s-"));
  let drop: () => Promise<void> = async () => {};
  let server: SlipwayProcess | undefined;
  let listener: SlipwayProcess | undefined;
  const close = async () => {
    await listener?.stop();
    await server?.stop();
    await k8s.close();
    await drop();
    rmSync(dir, { recursive: true, force: true });
  };
  let url = "";
  const api = async <T = Obj>(method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { "x-api-key": KEY, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  };
  try {
    const env: Record<string, string> = {
      PORT: String(opts.port ?? 0),
      HOST: "127.0.0.1",
      SLIPWAY_DATA_DIR: join(dir, "data"),
      SLIPWAY_BOOTSTRAP_API_KEY: KEY,
      SLIPWAY_APPS_PORT: "0",
      SLIPWAY_APPS_DOMAIN: "apps.example.test",
      SLIPWAY_LISTENER_TIMEOUT_S: "3",
      SLIPWAY_RATE_LIMIT_PER_MINUTE: "0",
      LOG_LEVEL: "warn",
      ...opts.env,
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
      compute_config: { k8s_namespaces: opts.listenerNamespaces ?? [NS] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const key = await api<{ key: string }>("POST", "/v1/api-keys", {
      role: "listener",
      listener_id: created.body.id,
      description: "e2e listener",
    });
    assert.equal(key.status, 201, JSON.stringify(key.body));
    // Short waits, resyncs and heartbeats keep the suites quick.
    const args = [
      ...["--url", url, "--api-key", key.body.key, "--listener-id", created.body.id],
      ...["--kubeconfig", k8s.kubeconfig(dir, NS, opts.rbacNamespaces ? LISTENER_TOKEN : undefined)],
      ...["--ingress-class", "nginx", "--wait", "5", "--resync", "1", "--heartbeat", "1"],
      ...(opts.listenerArgs ?? []),
    ];
    const startListener = async () => {
      listener = runSlipway(["listener", ...args], {});
      await listener.waitFor(/listener: started/, 300_000);
    };
    await startListener();
    return {
      k8s,
      url,
      listenerId: created.body.id,
      api,
      startListener,
      stopListener: async () => {
        await listener?.stop();
      },
      diagnostics: () =>
        `listener:\n${listener?.output()}\ncluster requests:\n${k8s.requests.slice(-10).join("\n")}`,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** A deployment of an image on the stack's listener, and its objects in the cluster. */
export interface K8sApp {
  id: string;
  /** The name of its API Deployment (and Service, Ingress). */
  base: string;
  /** Every Deployment labelled with it. */
  deployments(): Labelled[];
  apiDeployment(): Labelled | undefined;
  /** The revision the API Deployment's template is on. */
  templateRevision(): string | undefined;
  revision(id: string): Promise<Obj>;
  activeRevision(): Promise<string>;
  /** Writes the API Deployment's status, as the deployment controller does. */
  patchStatus(status: Obj): Promise<void>;
  /** The deployment controller and kubelet: every replica of the current template is up. */
  completeRollout(): Promise<void>;
  /** Creates a Pod of the current template and writes its status, as the kubelet does. */
  createPod(name: string, status: Obj): Promise<void>;
}

export async function createApp(
  stack: K8sStack,
  name: string,
  image: string,
  extra: Obj = {},
): Promise<K8sApp> {
  const dep = await stack.api<{ id: string }>("POST", "/v2/deployments", {
    name,
    source: "external_docker",
    source_config: { listener_id: stack.listenerId, listener_config: { k8s_namespace: NS } },
    source_revision_config: { image_uri: image },
    ...extra,
  });
  assert.equal(dep.status, 201, JSON.stringify(dep.body));
  const id = dep.body.id;
  const base = `${name}-${id.slice(0, 8)}`;
  const { k8s, api } = stack;
  const deployments = () =>
    k8s.store.list(resource("apps", "v1", "deployments"), NS, {
      labelSelector: `slipway.dev/deployment-id=${id}`,
      fieldSelector: null,
    }) as Labelled[];
  const apiDeployment = () => deployments().find((d) => d.metadata.name === base);
  const write = async (path: string, method: string, body: Obj, want: number) => {
    const res = await fetch(`${k8s.url}${path}`, {
      method,
      headers: { "content-type": method === "PATCH" ? "application/merge-patch+json" : "application/json" },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, want, await res.text());
  };
  const patchStatus = (status: Obj) =>
    write(`/apis/apps/v1/namespaces/${NS}/deployments/${base}/status`, "PATCH", { status }, 200);
  return {
    id,
    base,
    deployments,
    apiDeployment,
    templateRevision: () => apiDeployment()?.metadata.labels?.["slipway.dev/revision-id"],
    revision: async (rev) => (await api<Obj>("GET", `/v2/deployments/${id}/revisions/${rev}`)).body,
    activeRevision: async () =>
      (await api<{ active_revision_id: string }>("GET", `/v2/deployments/${id}`)).body.active_revision_id,
    patchStatus,
    completeRollout: async () => {
      const d = apiDeployment();
      assert.ok(d);
      await patchStatus({
        observedGeneration: d.metadata.generation,
        replicas: 1,
        updatedReplicas: 1,
        readyReplicas: 1,
        availableReplicas: 1,
        conditions: [{ type: "Available", status: "True", reason: "MinimumReplicasAvailable" }],
      });
    },
    createPod: async (pod, status) => {
      const d = apiDeployment();
      assert.ok(d);
      const path = `/api/v1/namespaces/${NS}/pods`;
      const spec = { containers: d.spec.template.spec.containers };
      const metadata = { name: pod, namespace: NS, labels: d.spec.template.metadata.labels };
      await write(path, "POST", { apiVersion: "v1", kind: "Pod", metadata, spec }, 201);
      await write(`${path}/${pod}/status`, "PATCH", { status }, 200);
    },
  };
}
