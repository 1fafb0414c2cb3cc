import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { AddressSlots, addressesOf } from "./addresses.ts";
import { run } from "./commands.ts";
import { gateElement, hostTableScript, NAMESPACE_RANGE, namespaceScript } from "./firewall.ts";
import { MirrorAccess } from "./mirror-access.ts";
import { PostgresGate } from "./pg-gate.ts";

/**
 * One network namespace per deployment (docs/network.md): made on the first build or start of the
 * deployment, shared by its builds, API processes, queue workers and Redis, removed by teardown (or
 * by close, which stops every app process). A veth pair joins it to the host; nftables (firewall.ts)
 * let the edge in and the gate out, and nothing else of the host.
 */

export interface NetworkOptions {
  egress: "internet" | "none";
  /** SLIPWAY_APP_EGRESS_ALLOW, and the resolvers and package mirrors (network/allowed.ts). */
  allow: string[];
  /** config.sandbox.mirrors: reachable from every namespace at their own URLs (mirror-access.ts). */
  mirrors?: readonly string[];
  /** Host table name and veth prefix (2 letters): tests use their own. */
  table?: string;
  prefix?: string;
  /** Namespace names start with it. */
  namePrefix?: string;
  /** Where the address slots are held (shared by every Slipway on the machine). */
  slotsDir?: string;
}

/** A deployment's namespace as the rest of the runtime uses it. */
export interface DeploymentNetwork {
  name: string;
  /** /run/netns/<name>: what `nsenter --net=` joins. */
  path: string;
  /** Its address: what the edge, the health check and Slipway's Redis client connect to. */
  address: string;
  /** The host end: where its gate listens. */
  hostAddress: string;
  hostIf: string;
}

const NETNS_DIR = "/run/netns";
const IP_FORWARD = "/proc/sys/net/ipv4/ip_forward";

/**
 * What a namespace sends beyond the host (the resolvers, mirrors elsewhere, the internet under
 * SLIPWAY_APP_EGRESS=internet) is routed by the host: IPv4 forwarding must be on, as Docker and
 * Podman turn it on for their bridges. It is a setting of the host's network namespace, left on
 * (others may rely on it); the host table lets nothing be forwarded into the namespaces but
 * replies (firewall.ts).
 */
async function enableForwarding(): Promise<void> {
  if ((await readFile(IP_FORWARD, "utf8")).trim() !== "1") await writeFile(IP_FORWARD, "1\n");
}

function digest(id: string): string {
  return createHash("sha256").update(id).digest("hex");
}

export class NetworkNamespaces {
  private readonly table: string;
  private readonly prefix: string;
  private readonly namePrefix: string;
  private readonly slots: AddressSlots;
  private readonly slotsDir: string;
  private readonly made = new Map<string, Promise<DeploymentNetwork>>();
  private readonly gates = new Map<string, Promise<PostgresGate>>();
  private hostTable: Promise<void> | undefined;
  private readonly mirrors: MirrorAccess;

  constructor(private readonly o: NetworkOptions) {
    this.table = o.table ?? "slipway";
    this.prefix = o.prefix ?? "sw";
    this.namePrefix = o.namePrefix ?? "slipway-";
    this.slotsDir = o.slotsDir ?? "/run/slipway/netns-slots";
    this.mirrors = new MirrorAccess(this.table, o.mirrors ?? []);
    this.slots = new AddressSlots(this.slotsDir, (name) => existsSync(`${NETNS_DIR}/${name}`));
  }

  /** The deployment's namespace, made now if it is not there (idempotent, also across restarts). */
  ensure(deploymentId: string): Promise<DeploymentNetwork> {
    let made = this.made.get(deploymentId);
    if (made === undefined) {
      made = this.create(deploymentId);
      this.made.set(deploymentId, made);
      made.catch(() => this.made.delete(deploymentId));
    }
    return made;
  }

  /** The running namespace of a deployment, if this runtime made or found it. */
  known(deploymentId: string): Promise<DeploymentNetwork> | undefined {
    return this.made.get(deploymentId);
  }

  private names(deploymentId: string): { name: string; hostIf: string; hint: number } {
    const h = digest(deploymentId);
    return {
      name: `${this.namePrefix}${h.slice(0, 24)}`,
      hostIf: `${this.prefix}${h.slice(0, 12)}`,
      hint: Number.parseInt(h.slice(0, 8), 16) % 32_768,
    };
  }

  private async create(deploymentId: string): Promise<DeploymentNetwork> {
    await this.ensureHostTable();
    const { name, hostIf, hint } = this.names(deploymentId);
    const index = await this.slots.take(name, hint);
    const { host, namespace } = addressesOf(index);
    const net: DeploymentNetwork = {
      name,
      path: `${NETNS_DIR}/${name}`,
      address: namespace,
      hostAddress: host,
      hostIf,
    };
    const exists = existsSync(net.path);
    if (exists && (await this.intact(net))) {
      await this.loadPolicy(net);
      await this.mirrors.open(deploymentId, net);
      return net;
    }
    try {
      if (!exists) await run("ip", ["netns", "add", name]);
      await run("ip", ["link", "del", hostIf]).catch(() => undefined);
      await run("ip", ["link", "add", hostIf, "type", "veth", "peer", "name", "eth0", "netns", name]);
      await run("ip", ["addr", "add", `${host}/30`, "dev", hostIf]);
      await run("ip", ["link", "set", hostIf, "up"]);
      await run(
        "ip",
        ["-n", name, "-b", "-"],
        [
          `addr add ${namespace}/30 dev eth0`,
          "link set eth0 up",
          "link set lo up",
          `route add default via ${host}`,
          "",
        ].join("\n"),
      );
      // The edge connects to the namespace's address; DNAT sends it to 127.0.0.1, which the
      // kernel routes from eth0 only with route_localnet.
      await run("ip", [
        "netns",
        "exec",
        name,
        "sysctl",
        "-qw",
        "net.ipv4.conf.all.route_localnet=1",
        "net.ipv4.conf.eth0.route_localnet=1",
      ]);
      await this.loadPolicy(net);
      await this.mirrors.open(deploymentId, net);
      return net;
    } catch (err) {
      await this.mirrors.close(deploymentId);
      await this.destroy(net, index);
      throw err;
    }
  }

  /** Whether a namespace left by an earlier Slipway still has its veth and address. */
  private async intact(net: DeploymentNetwork): Promise<boolean> {
    const out = await run("ip", ["-o", "-4", "addr", "show", "dev", net.hostIf]).catch(() => "");
    return out.includes(` ${net.hostAddress}/30 `);
  }

  /** (Re)loads the namespace's own table: the loopback DNAT and the egress policy. */
  private async loadPolicy(net: DeploymentNetwork): Promise<void> {
    const script = namespaceScript({
      address: net.address,
      hostAddress: net.hostAddress,
      egress: this.o.egress,
      allow: this.o.allow,
    });
    const reset = "table inet slipway {}\ndelete table inet slipway\n";
    await run("ip", ["netns", "exec", net.name, "nft", "-f", "-"], reset + script);
  }

  private ensureHostTable(): Promise<void> {
    // The whole range is a blackhole but for the namespaces' own /30s: a connection to the address
    // of a namespace that is gone fails here instead of leaving by the default route.
    this.hostTable ??= run("ip", ["route", "replace", "blackhole", NAMESPACE_RANGE])
      .then(() => run("nft", ["list", "table", "inet", this.table]))
      .then(
        () => undefined,
        () =>
          run("nft", ["-f", "-"], hostTableScript({ table: this.table, prefix: this.prefix })).then(
            () => undefined,
          ),
      )
      .then(() => enableForwarding());
    this.hostTable.catch(() => {
      this.hostTable = undefined;
    });
    return this.hostTable;
  }

  /**
   * The deployment's PostgreSQL gate (started on first call): reachable from its namespace alone,
   * it lets `role` into `database` on `upstream` and nothing else.
   */
  gate(
    deploymentId: string,
    upstream: { host: string; port: number },
    role: string,
    database: string,
  ): Promise<PostgresGate> {
    let gate = this.gates.get(deploymentId);
    if (gate === undefined) {
      gate = this.startGate(deploymentId, upstream, role, database);
      this.gates.set(deploymentId, gate);
      gate.catch(() => this.gates.delete(deploymentId));
    }
    return gate;
  }

  private async startGate(
    deploymentId: string,
    upstream: { host: string; port: number },
    role: string,
    database: string,
  ): Promise<PostgresGate> {
    const net = await this.ensure(deploymentId);
    const gate = new PostgresGate({ host: net.hostAddress, port: 5432, upstream, role, database });
    const port = await gate.listen();
    const element = gateElement(net.hostIf, net.hostAddress, port);
    await run("nft", ["add", "element", "inet", this.table, "gates", `{ ${element} }`]).catch(async (err) => {
      await gate.close();
      throw err;
    });
    return gate;
  }

  private async stopGate(deploymentId: string): Promise<void> {
    const pending = this.gates.get(deploymentId);
    this.gates.delete(deploymentId);
    const gate = await pending?.catch(() => undefined);
    if (gate === undefined) return;
    const net = this.names(deploymentId);
    const known = await this.made.get(deploymentId)?.catch(() => undefined);
    await gate.close();
    if (known !== undefined) {
      const element = gateElement(net.hostIf, known.hostAddress, gate.port);
      await run("nft", ["delete", "element", "inet", this.table, "gates", `{ ${element} }`]).catch(
        () => undefined,
      );
    }
  }

  /** Removes the deployment's namespace, veth and gate (after its processes have ended). */
  async remove(deploymentId: string): Promise<void> {
    await this.stopGate(deploymentId);
    await this.mirrors.close(deploymentId);
    const { name, hostIf } = this.names(deploymentId);
    const known = await this.made.get(deploymentId)?.catch(() => undefined);
    this.made.delete(deploymentId);
    const index = await this.slotOf(name);
    const net = known ?? { name, hostIf, path: `${NETNS_DIR}/${name}`, address: "", hostAddress: "" };
    await this.destroy(net, index);
  }

  /** Every namespace this runtime made (close: their processes are stopped) and, if unused, the host table. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.made.keys()].map((id) => this.remove(id)));
    const links = await run("ip", ["-o", "link", "show"]).catch(() => "");
    const inUse = links.split("\n").some((l) => l.split(": ")[1]?.startsWith(this.prefix));
    if (!inUse) await run("nft", ["delete", "table", "inet", this.table]).catch(() => undefined);
    const addresses = await run("ip", ["-o", "-4", "addr", "show", "to", NAMESPACE_RANGE]).catch(() => "x");
    if (addresses.trim() === "") {
      await run("ip", ["route", "del", "blackhole", NAMESPACE_RANGE]).catch(() => undefined);
    }
    this.hostTable = undefined;
  }

  private async slotOf(name: string): Promise<number | undefined> {
    const dir = this.slotsDir;
    for (const f of await readdir(dir).catch(() => [])) {
      if ((await readFile(`${dir}/${f}`, "utf8").catch(() => "")) === name) return Number(f);
    }
    return undefined;
  }

  private async destroy(
    net: Pick<DeploymentNetwork, "name" | "hostIf">,
    index: number | undefined,
  ): Promise<void> {
    await run("ip", ["link", "del", net.hostIf]).catch(() => undefined);
    if (existsSync(`${NETNS_DIR}/${net.name}`))
      await run("ip", ["netns", "del", net.name]).catch(() => undefined);
    if (index !== undefined) await this.slots.release(index, net.name);
  }
}
