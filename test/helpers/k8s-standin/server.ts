// Why over 300 lines: the one request router of the stand-in (paths, verbs, subresources, RBAC and
// namespace checks); split further it would scatter one switch over files.
// A stand-in Kubernetes API server (no cluster can run on these machines): the REST paths,
// discovery, Status errors and chunked watch stream of the real one, over an ObjectStore. Driven
// by the real kubectl in test/listener/k8s-standin.test.ts.
import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { loadYaml } from "@kubernetes/client-node";
import { authorize } from "./authz.ts";
import { type ControllerOptions, PodController } from "./controller.ts";
import type { Obj } from "./fields.ts";
import {
  findResource,
  groupList,
  openApiGroupVersion,
  openApiRoot,
  type ResourceType,
  resourceList,
} from "./resources.ts";
import { SelectorError } from "./selectors.ts";
import { ApiError, ObjectStore } from "./store.ts";

export interface StandInOptions {
  /** Namespaces that exist from the start besides default, kube-system and kube-public (labels: Pod Security). */
  namespaces?: (string | { name: string; labels?: Record<string, string> })[];
  /**
   * Bearer tokens of users whose requests RBAC authorizes from the stored Roles and RoleBindings
   * (`system:serviceaccount:<ns>:<name>` for a service account); any other token is a cluster admin.
   */
  users?: Record<string, string>;
  /** Run the pod controller (pods, PVCs and workload status); default off: tests write status themselves. */
  controller?: ControllerOptions | true;
}

export interface StandIn {
  url: string;
  store: ObjectStore;
  controller?: PodController;
  /** Writes a kubeconfig for this server (namespace `default`, an admin token) into `dir`, returns its path. */
  kubeconfig(dir: string, namespace?: string, token?: string): string;
  /** Every request line seen ("PATCH /apis/apps/v1/... dryRun=All"), for tests that check how a client talks. */
  requests: string[];
  close(): Promise<void>;
}

interface Target {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function status(res: ServerResponse, err: ApiError): void {
  send(res, err.code, {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: err.message,
    reason: err.reason,
    ...(err.details ? { details: err.details } : {}),
    code: err.code,
  });
}

/** /api/v1/... or /apis/g/v/... → the resource, namespace, name and subresource. */
function target(parts: string[]): Target | undefined {
  const [root, ...rest] = parts;
  const group = root === "api" ? "" : (rest.shift() ?? "");
  const version = rest.shift() ?? "";
  if (rest[0] === "namespaces" && rest.length >= 3) {
    const type = findResource(group, version, rest[2] ?? "");
    return type && { type, namespace: rest[1], name: rest[3], subresource: rest[4] };
  }
  const type = findResource(group, version, rest[0] ?? "");
  return type && { type, name: rest[1], subresource: rest[2] };
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function parseBody(text: string, contentType: string): Obj {
  try {
    const parsed: unknown = contentType.includes("yaml") ? loadYaml(text) : JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new Error("not an object");
    return parsed as Obj;
  } catch (err) {
    throw new ApiError(
      400,
      "BadRequest",
      `the body of the request was in an unknown format: ${err instanceof Error ? err.message : ""}`,
    );
  }
}

/** The RBAC verb of a request. */
function verbOf(method: string, t: Target, watching: boolean): string {
  if (method === "GET") return t.name ? "get" : watching ? "watch" : "list";
  return { POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" }[method] ?? method.toLowerCase();
}

export async function startK8sStandIn(opts: StandInOptions = {}): Promise<StandIn> {
  const store = new ObjectStore();
  const requests: string[] = [];
  const nsType = findResource("", "v1", "namespaces");
  for (const n of ["default", "kube-system", "kube-public", ...(opts.namespaces ?? [])]) {
    const { name, labels } = typeof n === "string" ? { name: n, labels: undefined } : n;
    if (nsType)
      store.create(
        nsType,
        undefined,
        { apiVersion: "v1", kind: "Namespace", metadata: { name, ...(labels ? { labels } : {}) } },
        "standin",
        false,
      );
  }
  const controller = opts.controller
    ? new PodController(store, opts.controller === true ? {} : opts.controller)
    : undefined;
  controller?.start();
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://standin");
    const q = url.searchParams;
    requests.push(`${req.method} ${url.pathname} ${q.toString()}`.trim());
    const parts = url.pathname.split("/").filter(Boolean);
    const path = url.pathname.replace(/\/$/, "");
    if (path === "/version")
      return send(res, 200, {
        major: "1",
        minor: "32",
        gitVersion: "v1.32.0-slipway-standin",
        platform: "linux/amd64",
      });
    if (path === "/api")
      return send(res, 200, { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] });
    if (path === "/apis") return send(res, 200, groupList());
    if (path === "/openapi/v3") return send(res, 200, openApiRoot());
    if (path.startsWith("/openapi/v3/"))
      return sendOr404(res, openApiGroupVersion(path.slice("/openapi/v3/".length)));
    if (parts[0] === "api" && parts.length === 2) return sendOr404(res, resourceList("", parts[1] ?? ""));
    if (parts[0] === "apis" && parts.length === 3)
      return sendOr404(res, resourceList(parts[1] ?? "", parts[2] ?? ""));
    const t = parts[0] === "api" || parts[0] === "apis" ? target(parts) : undefined;
    if (!t) throw new ApiError(404, "NotFound", "the server could not find the requested resource");
    const dryRun = q.getAll("dryRun").includes("All");
    const manager =
      q.get("fieldManager") ?? String(req.headers["user-agent"] ?? "unknown").split("/")[0] ?? "unknown";
    const query = { labelSelector: q.get("labelSelector"), fieldSelector: q.get("fieldSelector") };
    const contentType = String(req.headers["content-type"] ?? "");
    const statusWrite = t.subresource === "status";
    const watching = q.get("watch") === "true" || q.get("watch") === "1";
    const token = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ""))?.[1];
    const user = token ? opts.users?.[token] : undefined;
    if (user) {
      const resource = t.subresource ? `${t.type.plural}/${t.subresource}` : t.type.plural;
      const r = {
        user,
        verb: verbOf(req.method ?? "GET", t, watching),
        group: t.type.group,
        resource,
        namespace: t.namespace,
        name: t.name,
      };
      authorize(store, r);
      // A server-side apply that creates the object needs create too.
      if (req.method === "PATCH" && t.name && !t.subresource && !exists(store, t))
        authorize(store, { ...r, verb: "create" });
    }
    if (
      t.namespace &&
      req.method !== "GET" &&
      req.method !== "DELETE" &&
      !exists(store, { type: nsType as ResourceType, name: t.namespace })
    )
      throw new ApiError(404, "NotFound", `namespaces "${t.namespace}" not found`, {
        name: t.namespace,
        kind: "namespaces",
      });
    if (
      t.subresource === "scale" &&
      (t.type.kind === "Deployment" || t.type.kind === "StatefulSet") &&
      t.name
    )
      return scale(req, res, store, t, manager);
    if (t.subresource && !statusWrite) throw new ApiError(404, "NotFound", `no subresource ${t.subresource}`);
    if (statusWrite && !t.type.statusSubresource)
      throw new ApiError(404, "NotFound", `${t.type.plural} have no status subresource`);
    switch (req.method) {
      case "GET": {
        if (t.name) return send(res, 200, store.get(t.type, t.namespace, t.name));
        if (watching) return watch(req, res, store, t, query, q.get("resourceVersion"));
        const items = store.list(t.type, t.namespace, query);
        const apiVersion = t.type.group ? `${t.type.group}/${t.type.version}` : t.type.version;
        return send(res, 200, {
          kind: `${t.type.kind}List`,
          apiVersion,
          metadata: { resourceVersion: String(store.resourceVersion) },
          items,
        });
      }
      case "POST": {
        const obj = parseBody(await body(req), contentType);
        if (!t.type.namespaced || t.namespace === undefined) {
          if (t.type.namespaced) throw new ApiError(405, "MethodNotAllowed", "create needs a namespace");
        }
        const meta = (obj.metadata ?? {}) as Obj;
        if (t.namespace) obj.metadata = { ...meta, namespace: meta.namespace ?? t.namespace };
        return send(res, 201, store.create(t.type, t.namespace, obj, manager, dryRun));
      }
      case "PUT": {
        if (!t.name) throw new ApiError(405, "MethodNotAllowed", "PUT needs a name");
        const obj = parseBody(await body(req), contentType);
        return send(
          res,
          200,
          store.update(t.type, t.namespace, t.name, { replace: obj }, manager, dryRun, statusWrite),
        );
      }
      case "PATCH": {
        if (!t.name) throw new ApiError(405, "MethodNotAllowed", "PATCH needs a name");
        const text = await body(req);
        if (contentType.startsWith("application/apply-patch+yaml")) {
          if (!q.get("fieldManager"))
            throw new ApiError(422, "Invalid", "fieldManager is required for apply requests");
          const force = q.get("force") === "true";
          const r = store.apply(
            t.type,
            t.namespace,
            t.name,
            parseBody(text, "yaml"),
            q.get("fieldManager") ?? "",
            force,
            dryRun,
          );
          return send(res, r.created ? 201 : 200, r.obj);
        }
        if (
          contentType.startsWith("application/merge-patch+json") ||
          contentType.startsWith("application/strategic-merge-patch+json")
        ) {
          return send(
            res,
            200,
            store.update(
              t.type,
              t.namespace,
              t.name,
              { merge: parseBody(text, "json") },
              manager,
              dryRun,
              statusWrite,
            ),
          );
        }
        throw new ApiError(
          415,
          "UnsupportedMediaType",
          `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml`,
        );
      }
      case "DELETE": {
        if (!t.name) throw new ApiError(405, "MethodNotAllowed", "collection delete is not served");
        return send(res, 200, store.delete(t.type, t.namespace, t.name, dryRun));
      }
      default:
        throw new ApiError(405, "MethodNotAllowed", `${req.method} is not allowed`);
    }
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof ApiError) return status(res, err);
      if (err instanceof SelectorError) return status(res, new ApiError(400, "BadRequest", err.message));
      status(res, new ApiError(500, "InternalError", err instanceof Error ? err.message : String(err)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    store,
    requests,
    kubeconfig(dir, namespace = "default", token = "standin-token") {
      const path = join(dir, "kubeconfig");
      writeFileSync(
        path,
        JSON.stringify({
          apiVersion: "v1",
          kind: "Config",
          // Plain HTTP on loopback: client-node refuses http:// unless TLS checks are declared off.
          clusters: [{ name: "standin", cluster: { server: url, "insecure-skip-tls-verify": true } }],
          users: [{ name: "standin", user: { token } }],
          contexts: [{ name: "standin", context: { cluster: "standin", user: "standin", namespace } }],
          "current-context": "standin",
        }),
      );
      return path;
    },
    controller,
    close: () =>
      new Promise((resolve) => {
        controller?.stop();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sendOr404(res: ServerResponse, doc: object | undefined): void {
  if (doc) send(res, 200, doc);
  else status(res, new ApiError(404, "NotFound", "the server could not find the requested resource"));
}

/** A watch: newline-separated JSON events on a chunked response until the client goes away. */
function watch(
  req: IncomingMessage,
  res: ServerResponse,
  store: ObjectStore,
  t: Target,
  query: { labelSelector: string | null; fieldSelector: string | null },
  resourceVersion: string | null,
): void {
  res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
  // Headers go at once, as the real server sends them: clients wait for them before reading events.
  res.flushHeaders();
  const since = resourceVersion && resourceVersion !== "0" ? Number(resourceVersion) : undefined;
  const stop = store.watch(t.type, t.namespace, query, since, (e) => {
    res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
  });
  req.on("close", stop);
  res.on("close", stop);
}

function exists(store: ObjectStore, t: Pick<Target, "type" | "namespace" | "name">): boolean {
  try {
    store.get(t.type, t.namespace, t.name ?? "");
    return true;
  } catch {
    return false;
  }
}

/** The `/scale` subresource (autoscaling/v1 Scale): what the HPA controller and `kubectl scale` write. */
async function scale(
  req: IncomingMessage,
  res: ServerResponse,
  store: ObjectStore,
  t: Target,
  manager: string,
): Promise<void> {
  const ns = t.namespace;
  const name = t.name ?? "";
  const asScale = (o: Obj): Obj => {
    const m = (o.metadata ?? {}) as Obj;
    const spec = (o.spec ?? {}) as Obj;
    const status = (o.status ?? {}) as Obj;
    return {
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: { name, namespace: ns, uid: m.uid, resourceVersion: m.resourceVersion },
      spec: { replicas: spec.replicas },
      status: { replicas: status.replicas ?? 0 },
    };
  };
  if (req.method === "GET") return send(res, 200, asScale(store.get(t.type, ns, name)));
  if (req.method !== "PUT" && req.method !== "PATCH")
    throw new ApiError(405, "MethodNotAllowed", `${req.method} is not allowed on scale`);
  const sent = parseBody(await body(req), "json");
  const replicas = ((sent.spec ?? {}) as Obj).replicas;
  if (typeof replicas !== "number" || replicas < 0)
    throw new ApiError(
      422,
      "Invalid",
      `Scale.autoscaling "${name}" is invalid: spec.replicas: Invalid value`,
    );
  const updated = store.update(t.type, ns, name, { merge: { spec: { replicas } } }, manager, false, false);
  send(res, 200, asScale(updated));
}
