import type { Config } from "../config.ts";
import { ConfigError } from "../config.ts";
import { absolutePathVar, choiceVar, type Env } from "./vars.ts";

/**
 * The apps edge (docs/edge.md): `auto` puts HAProxy in front of the Node edge when its binary is
 * there and starts, else the Node edge alone serves; `haproxy` requires it; `node` never uses it.
 * HAProxy fronts plain HTTP only: with SLIPWAY_APPS_TLS on, the Node edge serves both ports.
 */
export function edgeVars(env: Env): Config["apps"]["edge"] {
  const tlsOn = (env.SLIPWAY_APPS_TLS || "off").trim().toLowerCase() !== "off";
  const threads = (env.SLIPWAY_EDGE_THREADS || "auto").trim();
  if (threads !== "auto" && !/^[1-9]\d{0,2}$/.test(threads))
    throw new ConfigError(`SLIPWAY_EDGE_THREADS must be auto or a count of 1 to 999, got "${threads}".`);
  const kind = choiceVar(env, "SLIPWAY_EDGE", ["auto", "node", "haproxy"] as const);
  if (kind === "haproxy" && tlsOn)
    throw new ConfigError(
      "SLIPWAY_EDGE=haproxy cannot be used with SLIPWAY_APPS_TLS on: HTTPS is served by the Node edge (docs/edge.md); use auto or node.",
    );
  return {
    kind,
    haproxy: absolutePathVar(env, "SLIPWAY_EDGE_HAPROXY", "/usr/sbin/haproxy"),
    threads,
  };
}
