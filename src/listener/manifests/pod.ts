import type { DesiredDeployment } from "../../protocol/listener.ts";
import { registrySecretName, resourcesFor } from "./common.ts";

type Obj = Record<string, unknown>;

const CONTAINER_FIELDS = [
  "name",
  "image",
  "imagePullPolicy",
  "workingDir",
  "restartPolicy",
  "command",
  "args",
  "env",
  "envFrom",
  "resources",
  "volumeMounts",
  "securityContext",
] as const;
const VOLUME_FIELDS = [
  "name",
  "configMap",
  "secret",
  "emptyDir",
  "persistentVolumeClaim",
  "nfs",
  "projected",
  "downwardAPI",
  "csi",
] as const;
const MOUNT_FIELDS = ["name", "mountPath", "subPath", "mountPropagation", "subPathExpr", "readOnly"] as const;

function pick(source: unknown, fields: readonly string[]): Obj {
  const out: Obj = {};
  if (typeof source !== "object" || source === null) return out;
  const from = source as Obj;
  for (const f of fields) if (from[f] !== undefined && from[f] !== null) out[f] = from[f];
  return out;
}

function list(spec: Obj | null, key: string): unknown[] {
  const v = spec?.[key];
  return Array.isArray(v) ? v : [];
}

/** The ResourceSpec pod fields, each copied field by field (unknown keys never reach the cluster). */
export function podFields(spec: Obj | null): {
  volumes: Obj[];
  volumeMounts: Obj[];
  initContainers: Obj[];
  sidecars: { native: Obj[]; plain: Obj[] };
  serviceAccountName?: string;
  imagePullSecrets: Obj[];
} {
  const sidecars = list(spec, "sidecars").map((c) => pick(c, CONTAINER_FIELDS));
  const account = spec?.service_account_name;
  return {
    volumes: list(spec, "volumes").map((v) => pick(v, VOLUME_FIELDS)),
    volumeMounts: list(spec, "volume_mounts").map((m) => pick(m, MOUNT_FIELDS)),
    initContainers: list(spec, "init_containers").map((c) => pick(c, CONTAINER_FIELDS)),
    // A sidecar that asks for restartPolicy Always is a native sidecar (an init container that
    // keeps running); a plain container may not carry restartPolicy at all.
    sidecars: {
      native: sidecars.filter((c) => c.restartPolicy === "Always"),
      plain: sidecars
        .filter((c) => c.restartPolicy !== "Always")
        .map(({ restartPolicy: _dropped, ...rest }) => rest),
    },
    serviceAccountName: typeof account === "string" && account ? account : undefined,
    imagePullSecrets: list(spec, "image_pull_secrets").map((s) => pick(s, ["name"])),
  };
}

export function stringMap(spec: Obj | null, key: string): Record<string, string> {
  const v = spec?.[key];
  if (typeof v !== "object" || v === null || Array.isArray(v)) return {};
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) if (typeof val === "string") out[k] = val;
  return out;
}

export interface AppContainerOptions {
  name: string;
  envSecret: string;
  /** Extra env entries (DATABASE_URI, REDIS_URI, SLIPWAY_PROCESS) before the secret references. */
  extraEnv: Obj[];
  /** Resource fields prefix: "" for API workers, "queue_" for queue workers. */
  resourcePrefix: string;
  /** Serve HTTP: a port and probes on the health path. */
  http: boolean;
}

/** The app's own container: its image, env from the env Secret, secret references, probes. */
export function appContainer(d: DesiredDeployment, o: AppContainerOptions): Obj {
  const fields = podFields(d.resource_spec);
  const env = [
    ...o.extraEnv,
    ...d.secret_references.map((r) => ({
      name: r.name,
      valueFrom: { secretKeyRef: { name: r.secret_name, key: r.key } },
    })),
  ];
  const container: Obj = {
    name: o.name,
    image: d.image,
    envFrom: [{ secretRef: { name: o.envSecret } }],
    resources: resourcesFor(d.resource_spec, o.resourcePrefix),
  };
  if (env.length) container.env = env;
  if (fields.volumeMounts.length) container.volumeMounts = fields.volumeMounts;
  if (o.http) {
    container.ports = [{ name: "http", containerPort: d.port, protocol: "TCP" }];
    const probe = { httpGet: { path: d.health_path, port: "http" } };
    container.readinessProbe = { ...probe, periodSeconds: 5, failureThreshold: 3 };
    container.livenessProbe = { ...probe, initialDelaySeconds: 10, periodSeconds: 10, failureThreshold: 6 };
  }
  return container;
}

/** A pod spec around the app container with every pod field of the ResourceSpec. */
export function podSpec(d: DesiredDeployment, app: Obj): Obj {
  const f = podFields(d.resource_spec);
  const spec: Obj = { containers: [app, ...f.sidecars.plain] };
  const init = [...f.initContainers, ...f.sidecars.native];
  if (init.length) spec.initContainers = init;
  if (f.volumes.length) spec.volumes = f.volumes;
  if (f.serviceAccountName) spec.serviceAccountName = f.serviceAccountName;
  // Slipway's registry first, then the ones the ResourceSpec names.
  const pullSecrets = [
    ...(d.registry_credentials ? [{ name: registrySecretName(d) }] : []),
    ...f.imagePullSecrets,
  ];
  if (pullSecrets.length) spec.imagePullSecrets = pullSecrets;
  return spec;
}
