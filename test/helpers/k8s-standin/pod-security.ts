// Pod Security admission on namespaces labelled pod-security.kubernetes.io/enforce: the
// "baseline" and "restricted" checks of the Pod Security Standards that apply to what Slipway
// makes, refused with the admission plugin's message (403) when a pod is created.
import type { Obj } from "./fields.ts";
import { ApiError } from "./store.ts";

const obj = (v: unknown): Obj => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(obj) : []);

const BASELINE_CAPS = new Set([
  "AUDIT_WRITE",
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "FSETID",
  "KILL",
  "MKNOD",
  "NET_BIND_SERVICE",
  "SETFCAP",
  "SETGID",
  "SETPCAP",
  "SETUID",
  "SYS_CHROOT",
]);
const RESTRICTED_VOLUMES = new Set([
  "configMap",
  "csi",
  "downwardAPI",
  "emptyDir",
  "ephemeral",
  "persistentVolumeClaim",
  "projected",
  "secret",
]);

/** The violations of `level` by a pod spec, in the admission plugin's words. */
export function violations(level: string, spec: Obj): string[] {
  const out: string[] = [];
  const containers = [...list(spec.initContainers), ...list(spec.containers)];
  const podSc = obj(spec.securityContext);
  const names = (f: (c: Obj) => boolean) => containers.filter(f).map((c) => `"${String(c.name)}"`);
  if (spec.hostNetwork || spec.hostPID || spec.hostIPC) out.push("host namespaces");
  const privileged = names((c) => obj(c.securityContext).privileged === true);
  if (privileged.length)
    out.push(`privileged (containers ${privileged.join(", ")} must not set securityContext.privileged=true)`);
  const added = names((c) =>
    strings(obj(obj(c.securityContext).capabilities).add).some((a) => !BASELINE_CAPS.has(a)),
  );
  if (added.length) out.push(`non-default capabilities (containers ${added.join(", ")})`);
  if (list(spec.volumes).some((v) => v.hostPath)) out.push("hostPath volumes");
  if (level !== "restricted") return out;
  const escalating = names((c) => obj(c.securityContext).allowPrivilegeEscalation !== false);
  if (escalating.length)
    out.push(
      `allowPrivilegeEscalation != false (containers ${escalating.join(", ")} must set securityContext.allowPrivilegeEscalation=false)`,
    );
  const caps = names((c) => !strings(obj(obj(c.securityContext).capabilities).drop).includes("ALL"));
  if (caps.length)
    out.push(
      `unrestricted capabilities (containers ${caps.join(", ")} must set securityContext.capabilities.drop=["ALL"])`,
    );
  const rootOk = podSc.runAsNonRoot === true;
  const root = names((c) => (obj(c.securityContext).runAsNonRoot ?? rootOk) !== true);
  if (root.length)
    out.push(
      `runAsNonRoot != true (pod or containers ${root.join(", ")} must set securityContext.runAsNonRoot=true)`,
    );
  if (podSc.runAsUser === 0 || containers.some((c) => obj(c.securityContext).runAsUser === 0))
    out.push("runAsUser=0");
  const podSeccomp = String(obj(podSc.seccompProfile).type ?? "");
  const noSeccomp = names((c) => {
    const t = String(obj(obj(c.securityContext).seccompProfile).type ?? podSeccomp);
    return t !== "RuntimeDefault" && t !== "Localhost";
  });
  if (noSeccomp.length)
    out.push(
      `seccompProfile (pod or containers ${noSeccomp.join(", ")} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
    );
  const volumes = list(spec.volumes).filter(
    (v) => !Object.keys(v).some((k) => k !== "name" && RESTRICTED_VOLUMES.has(k)),
  );
  if (volumes.length)
    out.push(`restricted volume types (volumes ${volumes.map((v) => `"${String(v.name)}"`).join(", ")})`);
  return out;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}

/** Throws the admission plugin's 403 when `namespace`'s enforce label refuses the pod. */
export function admitPod(namespace: Obj | undefined, pod: Obj): void {
  const level = obj(obj(namespace?.metadata).labels)["pod-security.kubernetes.io/enforce"];
  if (level !== "baseline" && level !== "restricted") return;
  const found = violations(level, obj(pod.spec));
  if (found.length === 0) return;
  throw new ApiError(
    403,
    "Forbidden",
    `pods "${String(obj(pod.metadata).name)}" is forbidden: violates PodSecurity "${level}:latest": ${found.join(", ")}`,
  );
}
