import type { SandboxMode } from "../../../config.ts";
import type { RuntimeLogger } from "../options.ts";
import type { ConfinerChoice } from "./confine.ts";

/**
 * Says once, at start, how apps are confined: a warning when there is no sandbox or a protection is
 * off (only the first organization may then deploy), and each protection that is on.
 */
export function announceConfinement(
  logger: RuntimeLogger,
  sandbox: SandboxMode,
  choice: ConfinerChoice,
): void {
  if (choice.system === undefined) {
    logger.warn(
      { sandbox, reason: choice.reason },
      "no sandbox: apps run unsandboxed, as Slipway's own user; only the first organization may deploy (docs/sandbox.md)",
    );
  }
  for (const p of choice.probes) {
    if (p.ok) logger.info({ protection: p.protection }, `protection on: ${p.protection}: ${p.detail}`);
    else {
      logger.warn(
        { protection: p.protection, detail: p.detail },
        `protection off: ${p.protection}: ${p.detail}; only the first organization may deploy (docs/protections.md)`,
      );
    }
  }
}
