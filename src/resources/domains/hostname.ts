import { isIP } from "node:net";
import { conflict, invalid } from "../../core/errors.ts";

/** Hostname rules of custom domains (docs/domains.md, "Hostnames"). */

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const bad = (msg: string) => invalid(["body", "hostname"], msg);

/**
 * The hostname as stored (lower case, no final dot), or a 422 for what cannot be a custom domain:
 * an IP address, a wildcard (HTTP-01 cannot validate one), more than 253 characters, a label that is
 * not letters, digits and inner hyphens (LDH), a single label; or a 409 for a host under the apps
 * domain, which would take over another deployment's host.
 */
export function normalizeHostname(raw: string, appsDomain: string): string {
  const host = raw.trim().toLowerCase().replace(/\.$/, "");
  if (host.includes("*")) throw bad("Wildcard hostnames are not supported: name one host.");
  if (isIP(host) !== 0 || isIP(host.replace(/^\[|\]$/g, "")) !== 0) {
    throw bad("An IP address is not a domain name.");
  }
  if (host.length === 0) throw bad("The hostname is empty.");
  if (host.length > 253) throw bad("A hostname has at most 253 characters.");
  const labels = host.split(".");
  if (labels.length < 2) throw bad("A custom domain has at least two labels (example.com).");
  const wrong = labels.find((l) => !LABEL.test(l));
  if (wrong !== undefined) {
    throw bad(
      `"${wrong.slice(0, 64)}" is not a valid label: 1 to 63 letters, digits or hyphens, not starting or ending with a hyphen.`,
    );
  }
  if (/^\d+$/.test(labels[labels.length - 1] ?? "")) throw bad("A top-level domain is not all digits.");
  const apps = appsDomain.toLowerCase().replace(/\.$/, "");
  if (host === apps || host.endsWith(`.${apps}`)) {
    throw conflict(`${host} is under the apps domain ${apps}: it would take over another deployment's host.`);
  }
  return host;
}
