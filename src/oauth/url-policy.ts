import { isLoopbackHostname } from "./address-policy.ts";

/**
 * Checks a configured OAuth or MCP URL before it is stored: absolute, https (http only for a
 * loopback host, and only when the operator allows it), no credentials, no fragment.
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
  if (url.protocol === "https:") return null;
  if (url.protocol === "http:") {
    if (!isLoopbackHostname(url.hostname)) return "must use https";
    if (!allowInsecureLoopback)
      return "must use https (http for loopback hosts needs SLIPWAY_OAUTH_ALLOW_INSECURE_LOOPBACK)";
    return null;
  }
  return "must use https";
}
