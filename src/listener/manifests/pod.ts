import type { EffectiveSpec } from "../../core/spec/effective.ts";
import type { DesiredDeployment } from "../../protocol/listener.ts";
import { type PartPrefix, registrySecretName, resourcesFor } from "./common.ts";
import { appPodSecurity, hardenContainer } from "./security.ts";
import type { PodSecurity } from "./types.ts";

type Obj = Record<string, unknown>;

export interface AppContainerOptions {
  name: string;
  envSecret: string;
  /** Extra env entries (DATABASE_URI, REDIS_URI, SLIPWAY_PROCESS) before the secret references. */
  extraEnv: Obj[];
  /** Resource fields prefix: "" for API workers, "queue_" for queue workers. */
  resourcePrefix: Extract<PartPrefix, "" | "queue_">;
  /** Serve HTTP: a port and probes on the health path. */
  http: boolean;
}

/** The app's own container: its image, env from the env Secret, secret references, probes. */
export function appContainer(d: DesiredDeployment, spec: EffectiveSpec, o: AppContainerOptions): Obj {
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
    resources: resourcesFor(spec.fields, o.resourcePrefix),
  };
  if (env.length) container.env = env;
  const mounts = spec.fields.volume_mounts ?? [];
  if (mounts.length) container.volumeMounts = mounts;
  if (o.http) {
    container.ports = [{ name: "http", containerPort: d.port, protocol: "TCP" }];
    const probe = { httpGet: { path: d.health_path, port: "http" } };
    container.readinessProbe = { ...probe, periodSeconds: 5, failureThreshold: 3 };
    container.livenessProbe = { ...probe, initialDelaySeconds: 10, periodSeconds: 10, failureThreshold: 6 };
  }
  return container;
}

/** A pod spec around the app container with every pod field of the ResourceSpec. */
export function podSpec(
  d: DesiredDeployment,
  spec: EffectiveSpec,
  app: Obj,
  level: PodSecurity = "baseline",
): Obj {
  const f = spec.fields;
  const sidecars = f.sidecars ?? [];
  // A sidecar that asks for restartPolicy Always is a native sidecar (an init container that
  // keeps running); a plain container may not carry restartPolicy at all.
  const native = sidecars.filter((c) => c.restartPolicy === "Always");
  const plain = sidecars
    .filter((c) => c.restartPolicy !== "Always")
    .map(({ restartPolicy: _dropped, ...rest }) => rest);
  const out: Obj = {
    // Service links put every Service of the namespace in the env: slow with many, and a leak.
    enableServiceLinks: false,
    securityContext: appPodSecurity(level),
    containers: [app, ...plain].map(hardenContainer),
  };
  const init = [...(f.init_containers ?? []), ...native];
  if (init.length) out.initContainers = init.map(hardenContainer);
  if (f.volumes?.length) out.volumes = f.volumes;
  if (f.service_account_name) out.serviceAccountName = f.service_account_name;
  // Slipway's registry first, then the ones the ResourceSpec names.
  const pullSecrets = [
    ...(d.registry_credentials ? [{ name: registrySecretName(d) }] : []),
    ...(f.image_pull_secrets ?? []),
  ];
  if (pullSecrets.length) out.imagePullSecrets = pullSecrets;
  return out;
}
