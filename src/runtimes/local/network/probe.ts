import type { ProtectionProbe } from "../protections/probes.ts";
import { run } from "./commands.ts";

/**
 * Whether this machine can give each deployment its own network namespace: Slipway must be root,
 * and `ip`, `nft` and `nsenter` must work. Off: apps use the host's network, as before.
 */
export async function probeNetworkNamespaces(): Promise<ProtectionProbe> {
  const protection = "network namespaces";
  if (process.getuid?.() !== 0) {
    return {
      protection,
      ok: false,
      detail:
        "Slipway does not run as root, so it cannot make network namespaces; apps share the host's network",
    };
  }
  const tools: [string, string[], string][] = [
    ["ip", ["-V"], "apt-get install iproute2"],
    ["nft", ["--version"], "apt-get install nftables"],
    ["nsenter", ["--version"], "apt-get install util-linux"],
  ];
  for (const [tool, args, fix] of tools) {
    const ok = await run(tool, args).then(
      () => true,
      () => false,
    );
    if (!ok) return { protection, ok: false, detail: `${tool} not found: ${fix}` };
  }
  const name = `slipway-probe-${process.pid}`;
  try {
    await run("ip", ["netns", "add", name]);
    await run("ip", ["netns", "exec", name, "nft", "list", "ruleset"]);
  } catch (err) {
    return {
      protection,
      ok: false,
      detail: `network namespaces do not work here (${(err as Error).message})`,
    };
  } finally {
    await run("ip", ["netns", "del", name]).catch(() => undefined);
  }
  return {
    protection,
    ok: true,
    detail: "each deployment runs in its own network namespace (docs/network.md)",
  };
}
