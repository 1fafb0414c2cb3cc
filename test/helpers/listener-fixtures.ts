import type { ManifestOptions } from "../../src/listener/manifests/types.ts";
import type { DesiredDeployment } from "../../src/protocol/listener.ts";

export const LISTENER_ID = "0b6c3f0e-5d1a-4c53-9f0e-2a4c1d7e9b10";

export function desired(overrides: Partial<DesiredDeployment> = {}): DesiredDeployment {
  return {
    deployment_id: "5f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
    name: "shop",
    namespace: "team-a",
    revision_id: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
    image: "registry.example.com/shop:1.0",
    env: { PORT: "8080", GREETING: "hello" },
    secret_references: [],
    resource_spec: {},
    health_path: "/ok",
    port: 8080,
    host: "shop.apps.example.com",
    deployment_type: "dev",
    registry_credentials: null,
    ...overrides,
  };
}

export function manifestOptions(overrides: Partial<ManifestOptions> = {}): ManifestOptions {
  return {
    listenerId: LISTENER_ID,
    routing: { kind: "ingress", className: "nginx" },
    postgresImage: "docker.io/library/postgres:16",
    redisImage: "docker.io/library/redis:7",
    ...overrides,
  };
}

/** A ResourceSpec with every field the interface has. */
export const FULL_SPEC: Record<string, unknown> = {
  min_scale: 2,
  max_scale: 5,
  cpu: 0.5,
  cpu_limit: 1,
  memory_mb: 512,
  memory_limit_mb: 1024,
  queue_min_scale: 1,
  queue_max_scale: 3,
  queue_cpu: 0.2,
  queue_cpu_limit: 0.4,
  queue_memory_mb: 256,
  queue_memory_limit_mb: 512,
  redis_cpu: 0.1,
  redis_cpu_limit: 0.2,
  redis_memory_mb: 128,
  redis_memory_limit_mb: 128,
  db_cpu: 1,
  db_cpu_limit: 2,
  db_memory_mb: 1024,
  db_memory_limit_mb: 2048,
  db_storage_gi: 10,
  db_max_connections: 200,
  labels: { team: "payments" },
  annotations: { "prometheus.io/scrape": "true" },
  service_account_name: "shop-runner",
  image_pull_secrets: [{ name: "regcred" }],
  volumes: [
    { name: "config", configMap: { name: "shop-config" } },
    { name: "scratch", emptyDir: { sizeLimit: "1Gi" } },
    { name: "creds", secret: { secretName: "shop-creds" } },
    { name: "data", persistentVolumeClaim: { claimName: "shop-data" } },
    { name: "share", nfs: { server: "nfs.internal", path: "/exports" } },
    { name: "bundle", projected: { sources: [{ configMap: { name: "a" } }] } },
    {
      name: "info",
      downwardAPI: { items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] },
    },
    { name: "vault", csi: { driver: "secrets-store.csi.k8s.io", readOnly: true } },
  ],
  volume_mounts: [
    { name: "config", mountPath: "/etc/shop", readOnly: true },
    { name: "scratch", mountPath: "/tmp/scratch", subPath: "x", mountPropagation: "None" },
    { name: "info", mountPath: "/etc/info", subPathExpr: "$(POD_NAME)" },
  ],
  init_containers: [
    {
      name: "migrate",
      image: "registry.example.com/shop:1.0",
      imagePullPolicy: "IfNotPresent",
      workingDir: "/app",
      command: ["npm"],
      args: ["run", "migrate"],
      env: [
        { name: "MODE", value: "migrate" },
        { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
      ],
      envFrom: [{ configMapRef: { name: "shop-config" } }],
      resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { memory: "128Mi" } },
      volumeMounts: [{ name: "config", mountPath: "/etc/shop" }],
      securityContext: { runAsNonRoot: true },
    },
  ],
  sidecars: [
    // Requests on both, so the HPA can compute utilization over the whole pod.
    {
      name: "log-shipper",
      image: "fluent/fluent-bit:3",
      restartPolicy: "Always",
      resources: { requests: { cpu: "50m", memory: "32Mi" } },
    },
    {
      name: "proxy",
      image: "envoyproxy/envoy:v1.30",
      args: ["-c", "/etc/envoy.yaml"],
      resources: { requests: { cpu: "50m", memory: "64Mi" } },
    },
  ],
};
