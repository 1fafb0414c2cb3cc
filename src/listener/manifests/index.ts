import { type EffectiveSpec, effectiveSpec } from "../../core/spec/effective.ts";
import type { DesiredDeployment } from "../../protocol/listener.ts";
import { redis } from "./cache.ts";
import { baseName, databaseStatefulSetName, registrySecretName } from "./common.ts";
import { postgres, URI_KEY } from "./database.ts";
import { networkPolicy, route, service } from "./network.ts";
import { pullSecret, secret } from "./secret.ts";
import type { K8sObject, ManifestOptions } from "./types.ts";
import { appWorkload, disruptionBudget, type WorkloadInput } from "./workloads.ts";

/** Generated passwords of the parts that have one; the listener keeps them in their Secrets. */
export interface Passwords {
  database?: string;
  cache?: string;
}

/**
 * The spec a deployment's objects are made from: its resource_spec resolved with its
 * deployment_type, as the local runtime resolves it (core/spec/effective.ts).
 */
export const specOf = (d: DesiredDeployment): EffectiveSpec =>
  effectiveSpec(d.resource_spec, d.deployment_type);

/** Which optional parts a deployment's spec asks for. */
export const partsOf = (d: DesiredDeployment): EffectiveSpec["asks"] => specOf(d).asks;

export const names = (d: DesiredDeployment) => {
  const base = baseName(d);
  return {
    base,
    env: `${base}-env`,
    queue: `${base}-queue`,
    /** The database's Secret and Service (its StatefulSet is `databaseStatefulSet`, ≤ 52 characters). */
    database: `${base}-db`,
    databaseStatefulSet: databaseStatefulSetName(d),
    cache: `${base}-redis`,
  };
};

/** Every object of one desired deployment, in the order they are applied. */
export function manifestsFor(
  d: DesiredDeployment,
  o: ManifestOptions,
  passwords: Passwords = {},
): K8sObject[] {
  const n = names(d);
  const spec = specOf(d);
  const parts = spec.asks;
  const objects: K8sObject[] = [secret(d, o.listenerId, n.env, d.env, "api")];
  if (d.registry_credentials) {
    objects.push(pullSecret(d, o.listenerId, registrySecretName(d), d.registry_credentials));
  }
  const extraEnv: Record<string, unknown>[] = [];
  if (parts.database) {
    if (!passwords.database) throw new Error(`${n.database}: a database password is needed`);
    objects.push(
      ...postgres(d, spec, o.listenerId, {
        name: n.database,
        statefulSet: n.databaseStatefulSet,
        password: passwords.database,
        image: o.postgresImage,
      }),
    );
    for (const env of ["DATABASE_URI", "POSTGRES_URI"]) {
      extraEnv.push({ name: env, valueFrom: { secretKeyRef: { name: n.database, key: URI_KEY } } });
    }
  }
  if (parts.cache) {
    if (!passwords.cache) throw new Error(`${n.cache}: a cache password is needed`);
    objects.push(...redis(d, spec, o.listenerId, n.cache, passwords.cache, o.redisImage));
    extraEnv.push({ name: "REDIS_URI", valueFrom: { secretKeyRef: { name: n.cache, key: "uri" } } });
  }
  const api: WorkloadInput = {
    d,
    spec,
    listenerId: o.listenerId,
    name: n.base,
    component: "api",
    envSecret: n.env,
    extraEnv,
    podSecurity: o.podSecurity,
  };
  const apiWorkload = appWorkload(api);
  objects.push(apiWorkload.deployment);
  objects.push(service(d, o.listenerId, n.base, "api", { name: "http", port: 80, targetPort: "http" }));
  const apiRoute = route(d, o.listenerId, n.base, o.routing);
  if (apiRoute) objects.push(apiRoute);
  const workloads = [{ input: api, hpa: apiWorkload.autoscaler }];
  if (parts.queue) {
    const queue: WorkloadInput = {
      ...api,
      name: n.queue,
      component: "queue",
      extraEnv: [...extraEnv, { name: "SLIPWAY_PROCESS", value: "queue" }],
    };
    const queueWorkload = appWorkload(queue);
    objects.push(queueWorkload.deployment);
    workloads.push({ input: queue, hpa: queueWorkload.autoscaler });
  }
  for (const w of workloads) {
    if (w.hpa) objects.push(w.hpa);
    const pdb = disruptionBudget(w.input);
    if (pdb) objects.push(pdb);
  }
  objects.push(networkPolicy(d, o.listenerId, n.base, o.ingressNamespace));
  return objects;
}
