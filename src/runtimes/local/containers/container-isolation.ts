import { createHash } from "node:crypto";
import { type Engine, execEngine } from "../../engine/engine.ts";
import type { EngineFinder } from "../../engine/finder.ts";
import { detectIsolation } from "../../engine/isolation.ts";
import { succeeds } from "../../shared/exec.ts";
import type { ProtectionProbe } from "../protections/probes.ts";

/**
 * Containers kept apart from the host and from each other (issue 26 item 2; docs/containers.md):
 * - each deployment gets its own bridge network, created with its first container and removed with
 *   its last, and an nftables table on that bridge: nothing on the host is reachable through the
 *   gateway (host services listening on all interfaces included), nobody opens connections into
 *   the network but its own containers and the published port, and private ranges (the cloud
 *   metadata address included) are out of reach unless allowed;
 * - podman runs each container in a user namespace of its own (`--userns=auto:size=65536`, from
 *   the `containers` ranges of /etc/subuid and /etc/subgid, which engine/isolation.ts sets up when
 *   Slipway runs as root);
 * - every container drops all capabilities but a few common images need, with no-new-privileges.
 */

/**
 * A user namespace of 65536 ids: any uid an image uses fits, and with a size podman does not
 * measure the image's ids itself, the path on which podman 4.3 deadlocks when another podman
 * writes its storage meanwhile (containers/storage reloads the layer list under its own lock;
 * podman issue 16062).
 */
const USERNS_AUTO = "--userns=auto:size=65536";

/** Capabilities a container keeps: enough to start as root and drop privileges, within its user namespace. */
export const CONTAINER_CAPS = ["CHOWN", "SETUID", "SETGID", "DAC_OVERRIDE", "FOWNER", "NET_BIND_SERVICE"];

/**
 * The `--cap-drop`, `--security-opt` and `--userns` flags of every container `create`. On the
 * host's network no user namespace: runc cannot mount /sys for a user namespace that does not own
 * the network namespace (measured), and that mode counts as isolation off anyway.
 */
export function hardeningFlags(engine: Engine, hostNetwork: boolean): string[] {
  const flags = [
    "--cap-drop=ALL",
    `--cap-add=${CONTAINER_CAPS.join(",")}`,
    "--security-opt",
    "no-new-privileges",
  ];
  // Docker remaps users daemon-wide (userns-remap) or not at all: no per-container flag.
  if (engine.name === "podman" && engine.isolation?.userns && !hostNetwork) flags.push(USERNS_AUTO);
  return flags;
}

/** The probe "container isolation" (protections/probes.ts) for the engine found and the configured network. */
export async function probeContainerIsolation(
  engine: Engine | undefined,
  network: "bridge" | "host",
): Promise<ProtectionProbe> {
  const protection = "container isolation";
  if (network === "host") {
    return {
      protection,
      ok: false,
      detail:
        "SLIPWAY_CONTAINER_NETWORK=host: containers share the host's network and reach every host service and other tenants; set SLIPWAY_CONTAINER_NETWORK=bridge",
    };
  }
  if (engine === undefined) {
    return { protection, ok: true, detail: "no container engine: image revisions do not run here" };
  }
  const isolation = engine.isolation ?? (await detectIsolation(engine));
  if (isolation.missing.length > 0) return { protection, ok: false, detail: isolation.missing.join("; ") };
  return {
    protection,
    ok: true,
    detail: `${engine.name}: a network per deployment with its gateway blocked, user namespaces, capabilities ${CONTAINER_CAPS.join(",")}, no-new-privileges`,
  };
}

/** The probe as a check of its own: finds the engine (once per finder) when it runs. */
export function containerIsolationCheck(
  finder: EngineFinder,
  network: "bridge" | "host",
): () => Promise<ProtectionProbe> {
  return async () => probeContainerIsolation(await finder.usable(), network);
}

/** A deployment's own network, named after this Slipway (owner) and the deployment. */
export function deploymentNetwork(owner: string, deploymentId: string): string {
  return `slipway-${owner.slice(0, 8)}-${deploymentId}`;
}

/** The nftables table guarding a deployment's network (nft names: letters, digits, underscores). */
export function firewallTable(network: string): string {
  return `slipway_ctr_${createHash("sha256").update(network).digest("hex").slice(0, 16)}`;
}

/** Where a container may not connect to, unless allowed: private, shared, link-local (metadata) ranges. */
export const PRIVATE_V4 = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "224.0.0.0/4",
  "240.0.0.0/4",
];
export const PRIVATE_V6 = ["::1/128", "fc00::/7", "fe80::/10", "ff00::/8"];

/** SLIPWAY_APP_EGRESS and SLIPWAY_APP_EGRESS_ALLOW as containers apply them. */
export interface ContainerEgress {
  mode: "internet" | "none";
  /** CIDRs reachable even in private ranges, and under "none". */
  allow: string[];
  /** Resolvers (from /etc/resolv.conf) reachable on port 53, under both modes. */
  resolvers: string[];
}

/** The nameservers of a resolv.conf, loopback ones left out (podman does not pass those on). */
export function resolversOf(resolvConf: string): string[] {
  const found: string[] = [];
  for (const line of resolvConf.split("\n")) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    const address = m?.[1];
    if (address === undefined || address.startsWith("127.") || address === "::1") continue;
    if (/^[\d.]+$/.test(address) || /^[\da-fA-F:]+$/.test(address)) found.push(address);
  }
  return found;
}

const v6 = (cidr: string) => cidr.includes(":");
const set = (items: string[]) => `{ ${items.join(", ")} }`;

/**
 * The table guarding one deployment's bridge, `$IFACE` defined by the caller (`nft -D`): applied
 * whole (the table is flushed first), so it can be applied again at every container start.
 */
export function firewallRules(table: string, egress: ContainerEgress): string {
  const lines = [
    `table inet ${table}`,
    `flush table inet ${table}`,
    `table inet ${table} {`,
    "  chain input {",
    "    type filter hook input priority filter - 5; policy accept;",
    // Answers to the edge's connections through the published port; nothing else reaches the host.
    "    iifname $IFACE ct state established,related accept",
    "    iifname $IFACE drop",
    "  }",
    "  chain forward {",
    "    type filter hook forward priority filter - 5; policy accept;",
    // Only the deployment's own containers open connections inside its network.
    "    oifname $IFACE iifname != $IFACE ct state new drop",
    "    iifname $IFACE ct state established,related accept",
    "    iifname $IFACE oifname $IFACE accept",
  ];
  // Resolvers and allowed ranges pass under both modes (as in the namespaces of docs/network.md):
  // `none` closes the internet, not the operator's own services.
  const resolvers4 = egress.resolvers.filter((a) => !v6(a));
  const resolvers6 = egress.resolvers.filter(v6);
  for (const [family, list] of [
    ["ip", resolvers4],
    ["ip6", resolvers6],
  ] as const) {
    if (list.length > 0) {
      lines.push(
        `    iifname $IFACE ${family} daddr ${set(list)} meta l4proto { tcp, udp } th dport 53 accept`,
      );
    }
  }
  const allow4 = egress.allow.filter((a) => !v6(a));
  const allow6 = egress.allow.filter(v6);
  if (allow4.length > 0) lines.push(`    iifname $IFACE ip daddr ${set(allow4)} accept`);
  if (allow6.length > 0) lines.push(`    iifname $IFACE ip6 daddr ${set(allow6)} accept`);
  if (egress.mode === "none") {
    lines.push("    iifname $IFACE drop");
  } else {
    lines.push(`    iifname $IFACE ip daddr ${set(PRIVATE_V4)} drop`);
    lines.push(`    iifname $IFACE ip6 daddr ${set(PRIVATE_V6)} drop`);
  }
  lines.push("  }", "}");
  return `${lines.join("\n")}\n`;
}

/** `network create` options and the `network inspect` format of the bridge's name, per engine. */
export function networkOptions(engine: Engine): { create: string; iface: string } {
  return engine.name === "podman"
    ? { create: "--disable-dns -o isolate=true", iface: "{{.NetworkInterface}}" }
    : { create: "", iface: 'br-{{printf "%.12s" .Id}}' };
}

/**
 * Shell lines (part of the container's start script, container.ts) making sure the deployment's
 * network exists and its table is in place before `create`. Uses $engine, $net, $net_opts (word
 * split on purpose), $iface_format, $rules, $owner_label, $deployment_label; defines `net_up`.
 */
export const NETWORK_UP = `net_up() {
  "$engine" network inspect "$net" >/dev/null 2>&1 ||
    "$engine" network create $net_opts --label "$owner_label" --label "$deployment_label" "$net" >/dev/null ||
    "$engine" network inspect "$net" >/dev/null 2>&1 || return 1
  [ -z "$rules" ] && return 0
  iface=$("$engine" network inspect --format "$iface_format" "$net") || return 1
  [ -n "$iface" ] || { echo "slipway: the network $net has no bridge interface" >&2; return 1; }
  printf '%s' "$rules" | nft -D "IFACE=$iface" -f - ||
    { echo "slipway: the firewall of $net could not be installed" >&2; return 1; }
}`;

/** Containers being started or running per network in this process: the network goes with the last. */
const users = new Map<string, number>();

export function networkInUse(network: string): void {
  users.set(network, (users.get(network) ?? 0) + 1);
}

/**
 * One container of `network` is gone: when it was the last this process started, the network and
 * its table are removed (the engine refuses while any container still uses the network).
 */
export async function networkReleased(engine: Engine, network: string): Promise<void> {
  const left = (users.get(network) ?? 1) - 1;
  if (left > 0) {
    users.set(network, left);
    return;
  }
  users.delete(network);
  await removeNetwork(engine, network);
}

/** Removes a network and its table, unless some container still uses it. Never throws. */
export async function removeNetwork(engine: Engine, network: string): Promise<boolean> {
  if ((users.get(network) ?? 0) > 0) return false;
  const r = await execEngine(engine, ["network", "rm", "--", network], 60_000);
  const gone = r.ok || /no such network|not found/i.test(r.stderr);
  if (gone) await succeeds("nft", ["delete", "table", "inet", firewallTable(network)]);
  return gone;
}
