import { isIPv4 } from "node:net";
import { type MirrorEndpoint, mirrorEndpoints } from "./allowed.ts";
import { run } from "./commands.ts";
import { gateElement } from "./firewall.ts";
import { LoopbackForward } from "./loopback-forward.ts";

/**
 * The configured package mirrors (config.sandbox.mirrors), reachable from every deployment's
 * namespace at their own URLs whatever the egress policy (docs/network.md):
 *
 * - one on the host's loopback through a forward of its port (the namespace's loopback is its
 *   own, so 127.0.0.1:<port> there would be refused);
 * - one on an address of the host through a `gates` element of the host table, which drops
 *   anything else a namespace sends to the host (so such a mirror used to time out).
 *
 * Either way that address and port alone: nothing else of the host opens.
 */
export class MirrorAccess {
  private endpoints: Promise<MirrorEndpoint[]> | undefined;
  /** Per deployment: its loopback forwards and its `gates` elements. */
  private readonly opened = new Map<string, { forwards: LoopbackForward[]; elements: string[] }>();

  constructor(
    /** The host table whose `gates` set admits a mirror on a host address. */
    private readonly table: string,
    private readonly mirrors: readonly string[],
  ) {}

  /** Opens the mirrors to the namespace `net` of `deploymentId`; throws when one cannot be. */
  async open(deploymentId: string, net: { path: string; hostIf: string }): Promise<void> {
    // Host names are looked up once, as for the egress policy (allowed.ts).
    this.endpoints ??= mirrorEndpoints(this.mirrors);
    const open = { forwards: [] as LoopbackForward[], elements: [] as string[] };
    this.opened.set(deploymentId, open);
    for (const m of await this.endpoints) {
      if (m.loopback) {
        const forward = LoopbackForward.open(net.path, m.address, m.port);
        // IPv6 may be off in the namespace: `localhost` then still reaches the mirror over 127.0.0.1.
        const done = await (m.address === "::1" ? forward.catch(() => undefined) : forward);
        if (done !== undefined) open.forwards.push(done);
      } else if (isIPv4(m.address)) {
        // The host table filters IPv4 only (namespaces have no IPv6 route out).
        const element = gateElement(net.hostIf, m.address, m.port);
        await run("nft", ["add", "element", "inet", this.table, "gates", `{ ${element} }`]);
        open.elements.push(element);
      }
    }
  }

  /** Closes what `open` opened for the deployment (teardown, or a namespace that failed). */
  async close(deploymentId: string): Promise<void> {
    const open = this.opened.get(deploymentId);
    this.opened.delete(deploymentId);
    if (open === undefined) return;
    await Promise.all(open.forwards.map((f) => f.close()));
    for (const element of open.elements)
      await run("nft", ["delete", "element", "inet", this.table, "gates", `{ ${element} }`]).catch(
        () => undefined,
      );
  }
}
