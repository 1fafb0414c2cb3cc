import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { resolvers } from "./namespace.ts";

/**
 * What a namespace may always reach besides the edge and its gate: SLIPWAY_APP_EGRESS_ALLOW, the
 * resolvers of /etc/resolv.conf and the package mirrors (SLIPWAY_NPM_REGISTRY, SLIPWAY_PIP_*;
 * npm's configured registry otherwise), even on private addresses. Mirrors named by host name are
 * looked up once, when the runtime starts using namespaces; npm's default public registry only
 * when egress is "none" (under "internet" public addresses are reachable anyway).
 */

/** The package mirror URLs the environment names (SLIPWAY_NPM_REGISTRY, SLIPWAY_PIP_*). */
export function mirrorUrls(env: NodeJS.ProcessEnv): { configured: URL[]; npmDefault: URL | undefined } {
  const configured: URL[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || (name !== "SLIPWAY_NPM_REGISTRY" && !name.startsWith("SLIPWAY_PIP_")))
      continue;
    for (const part of value.split(/\s+/)) {
      try {
        configured.push(new URL(part));
      } catch {
        // Not a URL (a PIP option such as a timeout).
      }
    }
  }
  const hasNpm = env.SLIPWAY_NPM_REGISTRY !== undefined && env.SLIPWAY_NPM_REGISTRY !== "";
  let npmDefault: URL | undefined;
  if (!hasNpm) {
    try {
      npmDefault = new URL(env.npm_config_registry || "https://registry.npmjs.org/");
    } catch {
      npmDefault = undefined;
    }
  }
  return { configured, npmDefault };
}

/** Addresses of a URL's host: the literal itself, or (when `resolve` is set) what it resolves to. */
async function addressesOf(url: URL, resolve: (host: string) => Promise<string[]>): Promise<string[]> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0) return [host];
  return resolve(host).catch(() => []);
}

export interface AllowInput {
  egress: "internet" | "none";
  egressAllow: string[];
  env?: NodeJS.ProcessEnv;
  resolvConf?: string;
  /** Host name → addresses (tests give their own; the default asks the system resolver). */
  resolve?: (host: string) => Promise<string[]>;
}

const systemResolve = async (host: string) => (await lookup(host, { all: true })).map((a) => a.address);

export async function allowedDestinations(a: AllowInput): Promise<string[]> {
  const resolve = a.resolve ?? systemResolve;
  const { configured, npmDefault } = mirrorUrls(a.env ?? process.env);
  const urls = [...configured];
  if (npmDefault !== undefined && (a.egress === "none" || isIP(npmDefault.hostname) !== 0))
    urls.push(npmDefault);
  const out = new Set<string>(a.egressAllow);
  for (const r of resolvers(a.resolvConf)) out.add(r);
  for (const url of urls) for (const addr of await addressesOf(url, resolve)) out.add(addr);
  // Loopback is the namespace's own: a host's loopback service is not reachable from it.
  return [...out].filter((c) => !c.startsWith("127.") && c !== "::1");
}
