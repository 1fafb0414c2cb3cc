import type { EffectiveSpec } from "../../core/spec/effective.ts";
import type { DesiredDeployment } from "../../protocol/listener.ts";
import { metadata, resourcesFor, selectorFor } from "./common.ts";
import { service } from "./network.ts";
import { secret } from "./secret.ts";
import type { K8sObject } from "./types.ts";

const USER = "app";
const DB = "app";

/** The key of the database Secret the app's DATABASE_URI comes from. */
export const URI_KEY = "uri";

/**
 * A Postgres for a deployment whose spec asks for one (`db_*`): its Secret (password and the
 * app's URI), a Service, and a one-replica StatefulSet whose volume claim template makes the PVC.
 */
export function postgres(
  d: DesiredDeployment,
  spec: EffectiveSpec,
  listenerId: string,
  name: string,
  password: string,
  image: string,
): K8sObject[] {
  const { fields } = spec;
  const uri = `postgresql://${USER}:${encodeURIComponent(password)}@${name}.${d.namespace}.svc:5432/${DB}`;
  const storage = Math.max(1, fields.db_storage_gi ?? 1);
  const maxConnections = fields.db_max_connections;
  const container: Record<string, unknown> = {
    name: "postgres",
    image,
    ports: [{ name: "postgres", containerPort: 5432, protocol: "TCP" }],
    env: [
      { name: "POSTGRES_USER", value: USER },
      { name: "POSTGRES_DB", value: DB },
      { name: "POSTGRES_PASSWORD", valueFrom: { secretKeyRef: { name, key: "password" } } },
      { name: "PGDATA", value: "/var/lib/postgresql/data/pgdata" },
    ],
    resources: resourcesFor(fields, "db_"),
    volumeMounts: [{ name: "data", mountPath: "/var/lib/postgresql/data" }],
    readinessProbe: { exec: { command: ["pg_isready", "-U", USER, "-d", DB] }, periodSeconds: 5 },
    livenessProbe: {
      exec: { command: ["pg_isready", "-U", USER, "-d", DB] },
      periodSeconds: 15,
      failureThreshold: 6,
    },
  };
  if (maxConnections !== undefined && maxConnections > 0) {
    container.args = ["-c", `max_connections=${maxConnections}`];
  }
  const statefulSet: K8sObject = {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: metadata(d, listenerId, name, "database"),
    spec: {
      serviceName: name,
      replicas: 1,
      selector: { matchLabels: selectorFor(d, "database") },
      template: {
        metadata: { labels: metadata(d, listenerId, name, "database").labels },
        spec: { containers: [container] },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data" },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: `${storage}Gi` } } },
        },
      ],
    },
  };
  return [
    secret(d, listenerId, name, { password, [URI_KEY]: uri }, "database"),
    service(d, listenerId, name, "database", { name: "postgres", port: 5432, targetPort: "postgres" }),
    statefulSet,
  ];
}
