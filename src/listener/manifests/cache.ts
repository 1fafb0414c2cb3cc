import type { EffectiveSpec } from "../../core/spec/effective.ts";
import type { DesiredDeployment } from "../../protocol/listener.ts";
import { metadata, resourcesFor, selectorFor } from "./common.ts";
import { service } from "./network.ts";
import { secret } from "./secret.ts";
import { hardenContainer, servicePodSecurity } from "./security.ts";
import type { K8sObject } from "./types.ts";

/**
 * A Redis for a deployment whose spec asks for one (`redis_*`): a Secret (password and the app's
 * REDIS_URI under `uri`), a Service and a one-replica Deployment. It is a cache: no volume. Nothing
 * here carries the app's revision: a new revision must not recreate it (and lose its data).
 */
export function redis(
  d: DesiredDeployment,
  spec: EffectiveSpec,
  listenerId: string,
  name: string,
  password: string,
  image: string,
): K8sObject[] {
  const uri = `redis://:${encodeURIComponent(password)}@${name}.${d.namespace}.svc:6379/0`;
  const labels = metadata(d, listenerId, name, "cache").labels;
  const deployment: K8sObject = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: metadata(d, listenerId, name, "cache"),
    spec: {
      replicas: 1,
      selector: { matchLabels: selectorFor(d, "cache") },
      strategy: { type: "Recreate" },
      template: {
        metadata: { labels },
        spec: {
          enableServiceLinks: false,
          securityContext: servicePodSecurity(),
          containers: [
            hardenContainer({
              name: "redis",
              image,
              // The kubelet expands $(REDIS_PASSWORD) from the container's env.
              args: ["--requirepass", "$(REDIS_PASSWORD)", "--save", ""],
              env: [{ name: "REDIS_PASSWORD", valueFrom: { secretKeyRef: { name, key: "password" } } }],
              ports: [{ name: "redis", containerPort: 6379, protocol: "TCP" }],
              resources: resourcesFor(spec.fields, "redis_"),
              readinessProbe: { tcpSocket: { port: "redis" }, periodSeconds: 5 },
              livenessProbe: { tcpSocket: { port: "redis" }, periodSeconds: 15, failureThreshold: 6 },
            }),
          ],
        },
      },
    },
  };
  return [
    secret(d, listenerId, name, { password, uri }, "cache"),
    service(d, listenerId, name, "cache", { name: "redis", port: 6379, targetPort: "redis" }),
    deployment,
  ];
}
