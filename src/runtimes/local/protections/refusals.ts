import type { ProtectionProbe } from "./probes.ts";

// What Slipway says when the sandbox or a protection is off: to tenants (no host detail), in the
// first organization's logs, and when it refuses to start.

/** Said to tenants whose revision cannot run here; names no host detail. */
export const NO_SANDBOX_REFUSAL =
  "this machine runs apps without a sandbox, so only the install's first organization may deploy; " +
  "the operator must install bubblewrap (Debian: apt-get install bubblewrap) and start Slipway " +
  "with SLIPWAY_SANDBOX=auto or bwrap (docs/sandbox.md)";

/** In every build and deploy log of the first organization's apps when there is no sandbox. */
export const UNSANDBOXED_WARNING =
  "slipway: warning: no sandbox is in use on this machine; this app runs unsandboxed, as Slipway's " +
  "own user and with access to its files (docs/sandbox.md)";

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
