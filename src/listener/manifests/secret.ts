import type { DesiredDeployment, RegistryCredentials } from "../../protocol/listener.ts";
import { base64, type Component, metadata } from "./common.ts";
import type { K8sObject } from "./types.ts";

/** An Opaque Secret holding `values` (base64 in `data`, so what is applied is what is stored). */
export function secret(
  d: DesiredDeployment,
  listenerId: string,
  name: string,
  values: Record<string, string>,
  component?: Component,
): K8sObject {
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) data[k] = base64(v);
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: metadata(d, listenerId, name, component),
    type: "Opaque",
    data,
  };
}

/** A dockerconfigjson Secret the pods pull their image with (kubelet reads `auths.<registry>`). */
export function pullSecret(
  d: DesiredDeployment,
  listenerId: string,
  name: string,
  c: RegistryCredentials,
): K8sObject {
  const auth = base64(`${c.username}:${c.password}`);
  const config = { auths: { [c.registry]: { username: c.username, password: c.password, auth } } };
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: metadata(d, listenerId, name),
    type: "kubernetes.io/dockerconfigjson",
    data: { ".dockerconfigjson": base64(JSON.stringify(config)) },
  };
}
