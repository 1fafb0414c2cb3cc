import { probeNetworkNamespaces } from "./network/probe.ts";

/**
 * The tenant protections the local runtime relies on (issue 26 item 5). Each part exposes a probe
 * that says whether this machine can apply it and, when not, what is missing and how to fix it.
 * At start the runtime runs them all (confine.ts) and logs each one that is off. With
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

/**
 * Probes of the parts that live elsewhere, run at start beside the pids limit and seccomp, which
 * the sandbox probes itself. Add a part's probe here; one that needs the runtime's state (container
 * isolation: its engine and network) is added by runtime.ts.
 */
export const OTHER_PROTECTION_PROBES: readonly ProtectionCheck[] = [probeNetworkNamespaces];

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

const names = (off: readonly ProtectionProbe[]) => off.map((p) => p.protection).join(", ");

/** Said to tenants whose revision cannot run here; names the protections, no host detail. */
export function protectionRefusal(off: readonly ProtectionProbe[]): string {
  return (
    `this machine lacks a tenant protection (${names(off)}), so only the install's first ` +
    "organization may deploy; the operator must fix what Slipway's start-up log names " +
    "(docs/protections.md)"
  );
}

/** Why SLIPWAY_SANDBOX=bwrap refuses to start: each missing protection with its fix. */
export function startRefusal(off: readonly ProtectionProbe[]): string {
  const each = off.map((p) => `${p.protection}: ${p.detail}`).join("; ");
  return (
    `SLIPWAY_SANDBOX=bwrap, but ${off.length === 1 ? "a protection is" : "protections are"} missing ` +
    `here (${each}); fix ${off.length === 1 ? "it" : "them"} or set SLIPWAY_SANDBOX=auto, under which ` +
    "only the first organization may deploy."
  );
}
