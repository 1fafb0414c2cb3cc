import { BlockList, isIP } from "node:net";

/**
 * Which network addresses the server may fetch OAuth and MCP metadata from. Everything that is not
 * a public unicast address is refused; loopback only when the operator allows it (local testing).
 */
const loopback = new BlockList();
loopback.addSubnet("127.0.0.0", 8, "ipv4");
loopback.addAddress("::1", "ipv6");

/** Cloud instance-metadata endpoints: refused whatever else is allowed. */
const metadata = new BlockList();
metadata.addAddress("169.254.169.254", "ipv4");
metadata.addAddress("fd00:ec2::254", "ipv6");

const refused: [string, number, "ipv4" | "ipv6", string][] = [
  ["0.0.0.0", 8, "ipv4", "unspecified"],
  ["10.0.0.0", 8, "ipv4", "private"],
  ["100.64.0.0", 10, "ipv4", "shared (CGNAT)"],
  ["169.254.0.0", 16, "ipv4", "link-local"],
  ["172.16.0.0", 12, "ipv4", "private"],
  ["192.0.0.0", 24, "ipv4", "reserved"],
  ["192.0.2.0", 24, "ipv4", "documentation"],
  ["192.168.0.0", 16, "ipv4", "private"],
  ["198.18.0.0", 15, "ipv4", "benchmarking"],
  ["198.51.100.0", 24, "ipv4", "documentation"],
  ["203.0.113.0", 24, "ipv4", "documentation"],
  ["224.0.0.0", 4, "ipv4", "multicast"],
  ["240.0.0.0", 4, "ipv4", "reserved"],
  ["::", 128, "ipv6", "unspecified"],
  ["64:ff9b:1::", 48, "ipv6", "local NAT64"],
  ["100::", 64, "ipv6", "discard-only"],
  ["2001:db8::", 32, "ipv6", "documentation"],
  ["fc00::", 7, "ipv6", "private (unique local)"],
  ["fe80::", 10, "ipv6", "link-local"],
  ["fec0::", 10, "ipv6", "site-local"],
  ["ff00::", 8, "ipv6", "multicast"],
];
const ranges = refused.map(([net, prefix, type, label]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, type);
  return { list, type, label };
});

/** The IPv4 address an IPv6 address carries (IPv4-mapped, IPv4-compatible or NAT64), if any. */
function embeddedIpv4(ip: string): string | undefined {
  const lower = ip.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = Number.parseInt(hex[1] ?? "0", 16);
    const lo = Number.parseInt(hex[2] ?? "0", 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return undefined;
}

export function isLoopbackAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return loopback.check(ip, "ipv4");
  if (family === 6) {
    const v4 = embeddedIpv4(ip);
    return v4 !== undefined ? loopback.check(v4, "ipv4") : loopback.check(ip, "ipv6");
  }
  return false;
}

/** Why the address may not be fetched from, or null when it may. */
export function refusedAddressReason(ip: string, allowLoopback: boolean): string | null {
  const family = isIP(ip);
  if (family === 0) return "not an IP address";
  if (family === 6) {
    const v4 = embeddedIpv4(ip);
    if (v4 !== undefined) return refusedAddressReason(v4, allowLoopback);
  }
  const type = family === 4 ? "ipv4" : "ipv6";
  if (metadata.check(ip, type)) return "a cloud metadata address";
  if (loopback.check(ip, type)) return allowLoopback ? null : "a loopback address";
  for (const r of ranges) {
    if (r.type === type && r.list.check(ip, type)) return `a ${r.label} address`;
  }
  if (ip === "255.255.255.255") return "the broadcast address";
  return null;
}

/** Host names that always mean this machine, without asking DNS. */
export function isLoopbackHostname(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  return isLoopbackAddress(host);
}

/**
 * Why a host may not be used, given every address it resolves to (an IP literal is its own only
 * address), or null. One refused address refuses the host: the connection could go to any.
 */
export function hostAddressProblem(host: string, addresses: string[], allowLoopback: boolean): string | null {
  for (const address of addresses) {
    const reason = refusedAddressReason(address, allowLoopback);
    if (reason === null) continue;
    return isIP(host) !== 0 ? `${host} is ${reason}` : `${host} resolves to ${reason} (${address})`;
  }
  return null;
}
