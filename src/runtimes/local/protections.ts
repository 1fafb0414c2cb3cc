/**
 * The tenant protections the local runtime relies on (issue 26 item 5). Each part exposes a probe
 * that says whether this machine can apply it and, when not, what is missing and how to fix it.
 */
export interface ProtectionProbe {
  /** Short stable name: "network namespaces", "container isolation", "pids limit", "seccomp". */
  protection: string;
  ok: boolean;
  /** What is missing and how to fix it (or, when ok, how the protection is applied). */
  detail: string;
}
