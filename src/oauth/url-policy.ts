import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { hostAddressProblem, isLoopbackHostname } from "./address-policy.ts";

/** How long a store-time check waits for DNS before leaving the host to the fetch-time check. */
const RESOLVE_TIMEOUT_MS = 5000;

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "");

/**
 * Checks a configured OAuth or MCP URL before it is stored: absolute, https (http only for a
 * loopback host, and only when the operator allows it), no credentials, no fragment, and no
 * literal address that is loopback (unless allowed), private, link-local or a metadata endpoint.
 * Returns the reason it is refused, or null. Addresses are checked again when fetched.
 */
export function urlProblem(raw: string, allowInsecureLoopback: boolean): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "must be an absolute URL";
  }
  if (url.username !== "" || url.password !== "") return "must not contain user name or password";
  if (url.hash !== "" || raw.includes("#")) return "must not contain a fragment";
  if (url.protocol === "http:") {
    if (!isLoopbackHostname(url.hostname)) return "must use https";
    if (!allowInsecureLoopback)
      return "must use https (http for loopback hosts needs SLIPWAY_OAUTH_ALLOW_INSECURE_LOOPBACK)";
  } else if (url.protocol !== "https:") {
    return "must use https";
  }
  const host = hostOf(url);
  if (isIP(host) !== 0) {
    const refused = hostAddressProblem(host, [host], allowInsecureLoopback);
    if (refused !== null) return `must point at a public address: ${refused}`;
  } else if (isLoopbackHostname(host) && !allowInsecureLoopback) {
    return `must point at a public address: ${host} resolves to a loopback address (SLIPWAY_OAUTH_ALLOW_INSECURE_LOOPBACK allows it)`;
  }
  return null;
}

async function resolveAll(host: string): Promise<string[] | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), RESOLVE_TIMEOUT_MS);
  });
  try {
    const found = lookup(host, { all: true, verbatim: true }).then(
      (list) => list.map((a) => a.address),
      () => null,
    );
    return await Promise.race([found, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * urlProblem, and for a host name, the addresses it resolves to now, under the same rules the
 * fetch applies (address-policy.ts). A name that does not resolve (yet) is not refused here: the
 * fetch resolves and checks it again, every time.
 */
export async function storedUrlProblem(raw: string, allowInsecureLoopback: boolean): Promise<string | null> {
  const problem = urlProblem(raw, allowInsecureLoopback);
  if (problem !== null) return problem;
  const host = hostOf(new URL(raw));
  if (isIP(host) !== 0 || isLoopbackHostname(host)) return null;
  const addresses = await resolveAll(host);
  if (addresses === null) return null;
  const refused = hostAddressProblem(host, addresses, allowInsecureLoopback);
  return refused === null ? null : `must point at a public address: ${refused}`;
}
