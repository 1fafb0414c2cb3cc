import type { EffectiveSpec } from "../../core/spec/effective.ts";
import type { DesiredDeployment } from "../../protocol/listener.ts";
import { metadata, resourcesFor, selectorFor } from "./common.ts";
import { service } from "./network.ts";
import { secret } from "./secret.ts";
import { hardenContainer, servicePodSecurity } from "./security.ts";
import type { K8sObject } from "./types.ts";

const USER = "app";
const DB = "app";

/** The key of the database Secret the app's DATABASE_URI comes from. */
export const URI_KEY = "uri";

/** The volume claim template's name: the PVC is `data-<StatefulSet>-0`. */
export const CLAIM = "data";
export const claimName = (statefulSet: string) => `${CLAIM}-${statefulSet}-0`;

/** The storage a spec asks for, as the claim's request. */
export const storageOf = (spec: EffectiveSpec) => `${Math.max(1, spec.fields.db_storage_gi ?? 1)}Gi`;

export interface DatabaseNames {
  /** The Secret's and Service's name. */
  name: string;
  /** The StatefulSet's (≤ 52 characters, see common.ts). */
  statefulSet: string;
  password: string;
  image: string;
}

/**
 * A Postgres for a deployment whose spec asks for one (`db_*`): its Secret (password and the
 * app's URI), a Service, and a one-replica StatefulSet whose volume claim template makes the PVC.
 * Nothing here carries the app's revision: a new revision must not restart the database. The PVC
 * goes with the StatefulSet (whenDeleted: Delete) and carries the labels the listener prunes by.
 */
export function postgres(
  d: DesiredDeployment,
  spec: EffectiveSpec,
  listenerId: string,
  db: DatabaseNames,
): K8sObject[] {
  const { name, password, image } = db;
  const { fields } = spec;
  const uri = `postgresql://${USER}:${encodeURIComponent(password)}@${name}.${d.namespace}.svc:5432/${DB}`;
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
  const labels = metadata(d, listenerId, name, "database").labels;
  const statefulSet: K8sObject = {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: metadata(d, listenerId, db.statefulSet, "database"),
    spec: {
      serviceName: name,
      replicas: 1,
      selector: { matchLabels: selectorFor(d, "database") },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: "Delete", whenScaled: "Retain" },
      template: {
        metadata: { labels },
        spec: {
          enableServiceLinks: false,
          securityContext: servicePodSecurity(),
          containers: [hardenContainer(container)],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: CLAIM, labels },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: storageOf(spec) } } },
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
