// Pod Security defaults: every pod passes the "baseline" level of Pod Security admission, and with
// `--pod-security restricted` the "restricted" one (docs/kubernetes.md "Security defaults").
import type { PodSecurity } from "./types.ts";

type Obj = Record<string, unknown>;

/** The uid app containers run as under "restricted" (any non-zero uid; images built by Slipway run as any uid). */
export const APP_UID = 10001;
/** The postgres and redis users of their official images. */
export const SERVICE_UID = 999;

const CONTAINER_DEFAULTS: Obj = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
};

/** A container with the defaults under its own securityContext (what the ResourceSpec sets wins). */
export function hardenContainer(container: Obj): Obj {
  const own = (container.securityContext ?? {}) as Obj;
  return { ...container, securityContext: { ...CONTAINER_DEFAULTS, ...own } };
}

/** The pod-level securityContext of an app pod at `level`. */
export function appPodSecurity(level: PodSecurity): Obj {
  const out: Obj = { seccompProfile: { type: "RuntimeDefault" } };
  if (level === "restricted") {
    out.runAsNonRoot = true;
    out.runAsUser = APP_UID;
  }
  return out;
}

/** Postgres and Redis run as their image's user at every level, so "restricted" namespaces take them. */
export function servicePodSecurity(): Obj {
  return {
    runAsNonRoot: true,
    runAsUser: SERVICE_UID,
    runAsGroup: SERVICE_UID,
    fsGroup: SERVICE_UID,
    seccompProfile: { type: "RuntimeDefault" },
  };
}
