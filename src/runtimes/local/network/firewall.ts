import { isIPv4 } from "node:net";

/**
 * The nftables rules of per-deployment network namespaces (docs/network.md). Two parts:
 *
 * - One host table (inet `<table>`), shared by every namespace of the same interface prefix:
 *   nothing that comes in from a namespace's veth reaches the host except its own PostgreSQL gate
 *   (the `gates` set: interface . address . port); nothing passes between namespaces or into one
 *   from outside except replies; what leaves for the outside is masqueraded.
 * - One table in each namespace (inet `slipway`): connections to its own address are sent to its
 *   loopback (apps may listen on 127.0.0.1 only), and the egress policy filters what goes out.
 *
 * Only text is built here; namespace.ts loads it with `nft -f`. Tests read the installed ruleset back.
 */

/** Ranges an app never reaches unless SLIPWAY_APP_EGRESS_ALLOW lists them (the metadata address included). */
export const PRIVATE_V4 = [
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "100.64.0.0/10",
  "169.254.0.0/16",
];
export const PRIVATE_V6 = ["fc00::/7", "fe80::/10"];

/** Where namespaces' addresses come from: a /30 each (a benchmarking range, unused on real networks). */
export const NAMESPACE_RANGE = "198.18.0.0/15";

/** The table in every namespace; the namespace is the deployment's own, so the name need not vary. */
export const NAMESPACE_TABLE = "slipway";

export interface HostTable {
  table: string;
  /** Host-side veth names start with it (2 letters). */
  prefix: string;
}

/** Creates the host table if missing (nft's `add` is idempotent for tables, sets and chains). */
export function hostTableScript(t: HostTable): string {
  const from = `iifname "${t.prefix}*"`;
  const to = `oifname "${t.prefix}*"`;
  return `table inet ${t.table} {
  set gates {
    type ifname . ipv4_addr . inet_service
  }
  chain input {
    type filter hook input priority filter - 5; policy accept;
    ${from} ct state established,related accept
    ${from} meta nfproto ipv4 meta l4proto tcp iifname . ip daddr . tcp dport @gates accept
    ${from} drop
  }
  chain forward {
    type filter hook forward priority filter - 5; policy accept;
    ${from} ${to} drop
    ${to} ct state established,related accept
    ${to} drop
  }
  chain postrouting {
    type nat hook postrouting priority srcnat + 5; policy accept;
    ip saddr ${NAMESPACE_RANGE} ${to.replace("oifname", "oifname !=")} masquerade
  }
}
`;
}

/** A gate's element of the host table's `gates` set. */
export function gateElement(hostIf: string, address: string, port: number): string {
  return `"${hostIf}" . ${address} . ${port}`;
}

export interface NamespacePolicy {
  /** The namespace's own address (eth0) and the host end's (its gate). */
  address: string;
  hostAddress: string;
  egress: "internet" | "none";
  /** CIDRs (or addresses) always reachable: SLIPWAY_APP_EGRESS_ALLOW, resolvers, package mirrors. */
  allow: string[];
}

const v4 = (cidr: string) => isIPv4(cidr.split("/")[0] ?? "");
const set = (items: string[]) => `{ ${items.join(", ")} }`;

/** The namespace's own table: loopback DNAT for the edge, and the egress policy. */
export function namespaceScript(p: NamespacePolicy): string {
  const allow4 = p.allow.filter(v4);
  const allow6 = p.allow.filter((c) => !v4(c));
  const lines = [
    `    oifname "lo" accept`,
    `    ct state established,related accept`,
    // The gate (the host input chain admits its port alone).
    `    ip daddr ${p.hostAddress} accept`,
  ];
  if (allow4.length > 0) lines.push(`    ip daddr ${set(allow4)} accept`);
  if (allow6.length > 0) lines.push(`    ip6 daddr ${set(allow6)} accept`);
  lines.push(`    ip daddr ${set(PRIVATE_V4)} drop`, `    ip6 daddr ${set(PRIVATE_V6)} drop`);
  lines.push(p.egress === "none" ? "    drop" : "    accept");
  return `table inet ${NAMESPACE_TABLE} {
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    iifname "eth0" ip daddr ${p.address} dnat ip to 127.0.0.1
  }
  chain output {
    type filter hook output priority filter; policy accept;
${lines.join("\n")}
  }
}
`;
}
