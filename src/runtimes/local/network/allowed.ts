import { lookup } from "node:dns/promises";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";

/**
 * What a namespace may always reach besides the edge and its gate: SLIPWAY_APP_EGRESS_ALLOW, the
 * resolvers of /etc/resolv.conf and the package mirrors (config.sandbox.mirrors: SLIPWAY_NPM_REGISTRY,
 * SLIPWAY_PIP_INDEX_URL, SLIPWAY_PIP_EXTRA_INDEX_URL; npm's own registry otherwise), even on private addresses. Mirrors named by host name are
 * looked up once, when the runtime starts using namespaces; npm's default public registry only
 * when egress is "none" (under "internet" public addresses are reachable anyway).
 */

/** The package mirrors as URLs: the configured ones, else npm's own registry. */
export function mirrorUrls(mirrors: readonly string[]): { configured: URL[]; npmDefault: URL | undefined } {
  const configured = mirrors.map((m) => new URL(m));
  return {
    configured,
    npmDefault: configured.length === 0 ? new URL("https://registry.npmjs.org/") : undefined,
  };
}

/** Addresses of a URL's host: the literal itself, or (when `resolve` is set) what it resolves to. */
async function addressesOf(url: URL, resolve: (host: string) => Promise<string[]>): Promise<string[]> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0) return [host];
  return resolve(host).catch(() => []);
}

const systemResolve = async (host: string) => (await lookup(host, { all: true })).map((a) => a.address);

/** Where a mirror listens: an address (its host's) and a port (the URL's, else its scheme's). */
export interface MirrorEndpoint {
  address: string;
  port: number;
  /** On the host's loopback: forwarded into the namespace (loopback-forward.ts). */
  loopback: boolean;
}

const isLoopback = (address: string) => address.startsWith("127.") || address === "::1";

/** The configured mirrors' endpoints (npm's default registry is public: never one of them). */
export async function mirrorEndpoints(
  mirrors: readonly string[],
  resolve: (host: string) => Promise<string[]> = systemResolve,
): Promise<MirrorEndpoint[]> {
  const out = new Map<string, MirrorEndpoint>();
  for (const url of mirrorUrls(mirrors).configured) {
    const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
    for (const address of await addressesOf(url, resolve))
      out.set(`${address} ${port}`, { address, port, loopback: isLoopback(address) });
  }
  return [...out.values()];
}

export interface AllowInput {
  egress: "internet" | "none";
  egressAllow: string[];
  /** config.sandbox.mirrors: the package mirrors builds may always reach. */
  mirrors: readonly string[];
  resolvConf?: string;
  /** Host name → addresses (tests give their own; the default asks the system resolver). */
  resolve?: (host: string) => Promise<string[]>;
}

export async function allowedDestinations(a: AllowInput): Promise<string[]> {
  const resolve = a.resolve ?? systemResolve;
  const { configured, npmDefault } = mirrorUrls(a.mirrors);
  const urls = [...configured];
  if (npmDefault !== undefined && (a.egress === "none" || isIP(npmDefault.hostname) !== 0))
    urls.push(npmDefault);
  const out = new Set<string>(a.egressAllow);
  for (const r of resolvers(a.resolvConf)) out.add(r);
  for (const url of urls) for (const addr of await addressesOf(url, resolve)) out.add(addr);
  // Loopback is the namespace's own: a host loopback mirror is forwarded into it, port by port.
  return [...out].filter((c) => !isLoopback(c));
}

/** The nameservers of /etc/resolv.conf (builds may always reach them). */
export function resolvers(file = "/etc/resolv.conf"): string[] {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of text.split("\n")) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    const addr = m?.[1]?.split("%")[0];
    if (addr !== undefined && isIP(addr) !== 0) out.push(addr);
  }
  return out;
}
