import type { DesiredDeployment } from "../../protocol/listener.ts";
import { type Component, hostValue, LABEL_INSTANCE, metadata, selectorFor } from "./common.ts";
import type { K8sObject, Routing } from "./types.ts";

/** A ClusterIP Service on port `port` in front of a component's pods. */
export function service(
  d: DesiredDeployment,
  listenerId: string,
  name: string,
  component: Component,
  port: { port: number; targetPort: number | string; name: string },
): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: metadata(d, listenerId, name, component),
    spec: {
      type: "ClusterIP",
      selector: selectorFor(d, component),
      ports: [{ name: port.name, port: port.port, targetPort: port.targetPort, protocol: "TCP" }],
    },
  };
}

/** The route from `d.host` to the API Service: an Ingress or a Gateway API HTTPRoute, or none. */
export function route(
  d: DesiredDeployment,
  listenerId: string,
  name: string,
  routing: Routing,
): K8sObject | null {
  if (!d.host || routing.kind === "none") return null;
  const host = hostValue(d.host);
  const meta = metadata(d, listenerId, name, "api");
  if (routing.kind === "ingress") {
    return {
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: meta,
      spec: {
        ...(routing.className ? { ingressClassName: routing.className } : {}),
        rules: [
          {
            host,
            http: {
              paths: [
                { path: "/", pathType: "Prefix", backend: { service: { name, port: { name: "http" } } } },
              ],
            },
          },
        ],
      },
    };
  }
  return {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: meta,
    spec: {
      parentRefs: [
        {
          group: "gateway.networking.k8s.io",
          kind: "Gateway",
          name: routing.gatewayName,
          ...(routing.gatewayNamespace ? { namespace: routing.gatewayNamespace } : {}),
        },
      ],
      hostnames: [host],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/" } }],
          backendRefs: [{ name, port: 80 }],
        },
      ],
    },
  };
}

/** The cloud metadata addresses (AWS, GCP, Azure share 169.254.169.254; AWS's IPv6 one). */
export const METADATA_CIDRS = { v4: "169.254.169.254/32", v6: "fd00:ec2::254/128" };

/**
 * One NetworkPolicy over every pod of the deployment (app, queue, database, cache): in, only from
 * its own pods and the ingress controller's namespace; out, anywhere but the cloud metadata
 * address, its own pods (CNIs differ on whether ipBlock covers pod addresses) and DNS.
 */
export function networkPolicy(
  d: DesiredDeployment,
  listenerId: string,
  name: string,
  ingressNamespace: string | undefined,
): K8sObject {
  const own = { podSelector: { matchLabels: { [LABEL_INSTANCE]: name } } };
  const from: Record<string, unknown>[] = [own];
  if (ingressNamespace) {
    from.push({ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ingressNamespace } } });
  }
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: metadata(d, listenerId, name),
    spec: {
      podSelector: own.podSelector,
      policyTypes: ["Ingress", "Egress"],
      ingress: [{ from }],
      egress: [
        {
          to: [
            { ipBlock: { cidr: "0.0.0.0/0", except: [METADATA_CIDRS.v4] } },
            { ipBlock: { cidr: "::/0", except: [METADATA_CIDRS.v6] } },
            own,
          ],
        },
        {
          ports: [
            { protocol: "UDP", port: 53 },
            { protocol: "TCP", port: 53 },
          ],
        },
      ],
    },
  };
}
