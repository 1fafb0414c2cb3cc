/**
 * The tenant protections the local runtime relies on (issue 26 item 5). Each part exposes a probe
 * that says whether this machine can apply it and, when not, what is missing and how to fix it.
 * At start the runtime runs them all (sandbox/confine.ts) and logs each one that is off. With
 * SLIPWAY_SANDBOX=auto only the install's first organization may then deploy; with
 * SLIPWAY_SANDBOX=bwrap Slipway refuses to start, naming what is missing.
 */
export interface ProtectionProbe {
  /** Short stable name: "network namespaces", "container isolation", "pids limit", "seccomp". */
  protection: string;
  ok: boolean;
  /** What is missing and how to fix it (or, when ok, how the protection is applied). */
  detail: string;
}

export type ProtectionCheck = () => Promise<ProtectionProbe>;

/** Protections that guard image revisions (containers); every other one guards sandboxed processes. */
const CONTAINER_PROTECTIONS = new Set(["container isolation"]);

/** Runs every check; one that throws counts as off, with its error as the detail. */
export async function runProbes(checks: readonly ProtectionCheck[]): Promise<ProtectionProbe[]> {
  return Promise.all(
    checks.map(async (check, i) => {
      try {
        return await check();
      } catch (err) {
        return { protection: `protection probe ${i + 1}`, ok: false, detail: (err as Error).message };
      }
    }),
  );
}

/** The protections that are off and guard revisions of this kind. */
export function offFor(probes: readonly ProtectionProbe[], kind: "process" | "image"): ProtectionProbe[] {
  return probes.filter((p) => !p.ok && CONTAINER_PROTECTIONS.has(p.protection) === (kind === "image"));
}
