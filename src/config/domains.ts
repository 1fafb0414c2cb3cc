import { type Config, ConfigError } from "../config.ts";
import { type Env, intVar } from "./vars.ts";

/** Custom domains' verification (docs/domains.md): the DNS server asked and the check pace. */
export function domainVars(env: Env): Config["domains"] {
  const resolver = env.SLIPWAY_DNS_RESOLVER || undefined;
  // host:port, or [v6]:port: what node:dns Resolver.setServers accepts.
  if (resolver !== undefined && !/^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/.test(resolver)) {
    throw new ConfigError(`SLIPWAY_DNS_RESOLVER must be host:port (e.g. 127.0.0.1:53), got "${resolver}".`);
  }
  return {
    dnsResolver: resolver,
    checkEveryMs: intVar(env, "SLIPWAY_DOMAIN_CHECK_MS", 30_000, 100, 86_400_000),
  };
}
