import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { type Engine, execEngine } from "../../../../src/runtimes/engine/engine.ts";
import { EngineFinder } from "../../../../src/runtimes/engine/finder.ts";
import type { RevisionSpec } from "../../../../src/runtimes/interface.ts";
import {
  CONTAINER_CAPS,
  containerIsolationCheck,
  deploymentNetwork,
  firewallRules,
  firewallTable,
  probeContainerIsolation,
  resolversOf,
} from "../../../../src/runtimes/local/containers/container-isolation.ts";
import type { LocalRuntime } from "../../../../src/runtimes/local/runtime.ts";
import { TestImages, testEngine } from "../../../helpers/container-images.ts";
import { cleanupTemp, hit, newRuntime, phase, spec, tempDir } from "../../../helpers/local-runtime.ts";

/**
 * Containers apart (issue 26 item 2), with real podman containers: a deployment's network of its
 * own, the host unreachable through its gateway, a user namespace, few capabilities. Traffic goes
 * only to loopback and to addresses of the podman networks these tests create.
 */

const engine: Engine | undefined = await testEngine();

/** The capability bits a container may hold (linux/capability.h numbers). */
const CAP_BITS: Record<string, number> = {
  CHOWN: 0,
  DAC_OVERRIDE: 1,
  FOWNER: 3,
  SETGID: 6,
  SETUID: 7,
  NET_BIND_SERVICE: 10,
};
const ALLOWED = CONTAINER_CAPS.reduce((mask, cap) => mask | (1n << BigInt(CAP_BITS[cap] ?? 63)), 0n);

function statusField(pid: number, field: string): string {
  const m = new RegExp(`^${field}:\\s*(.+)$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  assert.ok(m?.[1], `${field} of ${pid}`);
  return m[1].trim();
}

/** The pid and its descendants (the container's init and the app under it). */
function processTree(pid: number): number[] {
  const all = [pid];
  for (let i = 0; i < all.length; i++) {
    const p = all[i] ?? 0;
    for (const task of execFileSync("ls", [`/proc/${p}/task`], { encoding: "utf8" }).split(/\s+/)) {
      if (!task) continue;
      const kids = readFileSync(`/proc/${p}/task/${task}/children`, "utf8").trim();
      for (const kid of kids.split(/\s+/).filter(Boolean)) all.push(Number(kid));
    }
  }
  return all;
}

describe("local runtime: containers apart", () => {
  const images = engine === undefined ? undefined : new TestImages(engine);
  const skip = images === undefined ? "no container engine or busybox here (CI requires them)" : false;
  const runtimes: LocalRuntime[] = [];
  const servers: Server[] = [];
  let rt: LocalRuntime;
  let image = "";
  let a: RevisionSpec;
  let b: RevisionSpec;

  const inspect = async (name: string, format: string) => {
    assert.ok(engine);
    const r = await execEngine(engine, ["inspect", "--format", format, "--", name]);
    assert.ok(r.ok, r.stderr);
    return r.stdout.trim();
  };
  const names = async (s: RevisionSpec) => {
    assert.ok(images);
    return images.containers(rt.containers.owner, s.deploymentId);
  };
  const ipOf = (name: string) => inspect(name, "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}");
  /**
   * GET from inside a container (busybox nc: its static wget crashes there): the body, or
   * undefined when it cannot connect.
   */
  const fetchFrom = async (name: string, host: string, port: number) => {
    assert.ok(engine);
    const request = 'printf "GET / HTTP/1.0\\r\\n\\r\\n" | /bin/busybox nc -w 4 "$0" "$1"';
    const r = await execEngine(engine, [
      "exec",
      name,
      "/bin/busybox",
      "sh",
      "-c",
      request,
      host,
      String(port),
    ]);
    if (!r.ok) return undefined;
    assert.match(r.stdout, /^HTTP\/1\.[01] 200/);
    return r.stdout.slice(r.stdout.indexOf("\r\n\r\n") + 4);
  };
  const network = (s: RevisionSpec) => deploymentNetwork(rt.containers.owner, s.deploymentId);
  const networkField = async (net: string, format: string) => {
    assert.ok(engine);
    const r = await execEngine(engine, ["network", "inspect", "--format", format, "--", net]);
    return r.ok ? r.stdout.trim() : undefined;
  };
  const listen = async (host: string, body: string): Promise<number> => {
    const server = createServer((_req, res) => res.end(body));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    return (server.address() as AddressInfo).port;
  };

  before(async () => {
    if (images === undefined) return;
    image = await images.build("apart", "1", { version: "apart" });
    rt = newRuntime(tempDir(), { healthTimeoutMs: 20_000 });
    runtimes.push(rt);
    a = spec({ kind: "image", imageUri: image }, { resourceSpec: { min_scale: 2 } });
    b = spec({ kind: "image", imageUri: image });
    for (const s of [a, b]) {
      const ctx = phase();
      await rt.prepare(s, ctx);
      await rt.build(s, ctx);
      await rt.activate(s, phase());
    }
  });
  after(async () => {
    for (const server of servers) server.close();
    await Promise.all(runtimes.map((r) => r.close()));
    await images?.cleanup(runtimes.map((r) => r.containers.owner));
    cleanupTemp();
  });

  it("uid 0 in a container is not the host's root; capabilities within the list; no new privileges", {
    skip,
  }, async () => {
    const [name] = await names(a);
    assert.ok(name);
    const pid = Number(await inspect(name, "{{.State.Pid}}"));
    const tree = processTree(pid);
    assert.ok(tree.length >= 2, "the init and the app under it");
    for (const p of tree) {
      for (const map of ["uid_map", "gid_map"]) {
        const ranges = readFileSync(`/proc/${p}/${map}`, "utf8").trim().split("\n");
        for (const range of ranges) {
          const [inside, outside, count] = range.trim().split(/\s+/).map(Number);
          assert.ok(inside !== undefined && outside !== undefined && count !== undefined);
          assert.ok(outside > 0, `${map} ${range}: host id 0 is not mapped`);
          assert.ok(count < 4294967295, `${map} ${range}: not the whole host range`);
        }
      }
      const [, hostUid] = statusField(p, "Uid").split(/\s+/);
      assert.notEqual(hostUid, "0", "seen from the host, the container's root is another uid");
      for (const set of ["CapEff", "CapPrm", "CapBnd"]) {
        const mask = BigInt(`0x${statusField(p, set)}`);
        assert.equal(mask & ~ALLOWED, 0n, `${set} ${mask.toString(16)} within ${CONTAINER_CAPS}`);
      }
      assert.equal(statusField(p, "NoNewPrivs"), "1");
    }
  });

  it("each deployment has its own network; another deployment's container is unreachable", {
    skip,
  }, async () => {
    const [a1, a2] = await names(a);
    const [b1] = await names(b);
    assert.ok(a1 && a2 && b1);
    assert.equal(await inspect(a1, "{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}"), network(a));
    assert.equal(await inspect(b1, "{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}"), network(b));
    assert.equal(
      await networkField(network(a), "{{json .Labels}}"),
      JSON.stringify({
        "slipway.deployment": a.deploymentId,
        "slipway.owner": rt.containers.owner,
      }),
    );
    // Its own replicas reach each other: the network works, so what follows is the firewall.
    assert.equal(await fetchFrom(a1, await ipOf(a2), 8080), '{"version":"apart"}');
    assert.equal(await fetchFrom(a1, await ipOf(b1), 8080), undefined);
    assert.equal(await fetchFrom(b1, await ipOf(a1), 8080), undefined);
    // Both still answer through the edge.
    assert.deepEqual((await hit(rt, a.deploymentName)).json(), { version: "apart" });
    assert.deepEqual((await hit(rt, b.deploymentName)).json(), { version: "apart" });
  });

  it("the host is not reachable through the gateway, on its own address nor on all interfaces", {
    skip,
  }, async () => {
    const [name] = await names(a);
    assert.ok(name);
    const net = network(a);
    const gateway = await networkField(net, "{{range .Subnets}}{{.Gateway}}{{end}}");
    const iface = await networkField(net, "{{.NetworkInterface}}");
    assert.ok(gateway && iface);
    const onGateway = await listen(gateway, "host on the gateway");
    const everywhere = await listen("0.0.0.0", "host on all interfaces");
    const loopback = await listen("127.0.0.1", "host on loopback");
    // The host itself reaches them: they listen, so a failure below is the firewall's doing.
    assert.equal(await (await fetch(`http://${gateway}:${onGateway}/`)).text(), "host on the gateway");
    assert.equal(await (await fetch(`http://${gateway}:${everywhere}/`)).text(), "host on all interfaces");
    assert.equal(await fetchFrom(name, gateway, onGateway), undefined);
    assert.equal(await fetchFrom(name, gateway, everywhere), undefined);
    assert.equal(await fetchFrom(name, gateway, loopback), undefined);
    assert.equal(await fetchFrom(name, "127.0.0.1", loopback), undefined, "its own loopback");
    // Its own app on its own loopback still answers (the container's network works).
    assert.equal(await fetchFrom(name, "127.0.0.1", 8080), '{"version":"apart"}');

    const table = execFileSync("nft", ["list", "table", "inet", firewallTable(net)], { encoding: "utf8" });
    assert.match(table, /hook input/);
    assert.match(
      table,
      new RegExp(`iifname "${iface}" ct state established,related accept\\n\\s*iifname "${iface}" drop`),
    );
    assert.match(table, new RegExp(`oifname "${iface}" iifname != "${iface}" ct state new drop`));
    assert.match(table, new RegExp(`iifname "${iface}" ip daddr \\{[^}]*169\\.254\\.0\\.0/16[^}]*\\} drop`));
  });

  it("the network and its firewall go with the deployment's last container", { skip }, async () => {
    const net = network(b);
    assert.ok(await networkField(net, "{{.Name}}"));
    await rt.teardown(b.deploymentId);
    assert.equal(await networkField(net, "{{.Name}}"), undefined, "the network is gone");
    assert.throws(() =>
      execFileSync("nft", ["list", "table", "inet", firewallTable(net)], { stdio: "ignore" }),
    );
    // The other deployment is untouched, and its network goes when its runtime closes.
    assert.deepEqual((await hit(rt, a.deploymentName)).json(), { version: "apart" });
    await rt.close();
    assert.equal(await networkField(network(a), "{{.Name}}"), undefined);
    assert.throws(() =>
      execFileSync("nft", ["list", "table", "inet", firewallTable(network(a))], { stdio: "ignore" }),
    );
  });

  it("probe: the host network is a protection that is off; a bridge with everything in place is on", {
    skip,
  }, async () => {
    assert.ok(engine);
    const host = await probeContainerIsolation(engine, "host");
    assert.equal(host.protection, "container isolation");
    assert.equal(host.ok, false);
    assert.match(host.detail, /SLIPWAY_CONTAINER_NETWORK=host/);
    const bridge = await containerIsolationCheck(new EngineFinder(tempDir()), "bridge")();
    assert.deepEqual([bridge.ok, bridge.protection], [true, "container isolation"], bridge.detail);
    const lacking = await probeContainerIsolation(
      {
        ...engine,
        isolation: {
          firewall: false,
          userns: true,
          missing: ["nft is not usable: apt-get install nftables"],
        },
      },
      "bridge",
    );
    assert.deepEqual(lacking, {
      protection: "container isolation",
      ok: false,
      detail: "nft is not usable: apt-get install nftables",
    });
  });
});

describe("container isolation: settings", () => {
  it("resolvers come from resolv.conf without loopback ones", () => {
    const conf =
      "# comment\nnameserver 10.0.0.53\nnameserver 127.0.0.53\nnameserver ::1\nnameserver fd00::35\nsearch x\n";
    assert.deepEqual(resolversOf(conf), ["10.0.0.53", "fd00::35"]);
  });

  it("the firewall: private ranges denied, allowed ranges and resolvers let through; none drops all else", () => {
    const internet = firewallRules("t", {
      mode: "internet",
      allow: ["10.20.0.0/16", "fd12::/16"],
      resolvers: ["10.0.0.53"],
    });
    const order = ["10.0.0.53", "10.20.0.0/16", "fd12::/16", "169.254.0.0/16"].map((s) =>
      internet.indexOf(s),
    );
    assert.ok(order.every((i) => i > 0));
    assert.deepEqual(
      [...order].sort((x, y) => x - y),
      order,
      "accepts come before the private drop",
    );
    assert.match(internet, /ip daddr \{ 10\.0\.0\.53 \} meta l4proto \{ tcp, udp \} th dport 53 accept/);
    const none = firewallRules("t", { mode: "none", allow: ["10.20.0.0/16"], resolvers: ["10.0.0.53"] });
    // none: the allowed range and the resolvers still pass, then everything else is dropped.
    assert.match(none, /ip daddr \{ 10\.20\.0\.0\/16 \} accept\n\s*iifname \$IFACE drop\n\s*\}/);
    assert.match(none, /ip daddr \{ 10\.0\.0\.53 \} meta l4proto \{ tcp, udp \} th dport 53 accept/);
    assert.doesNotMatch(none, /169\.254/);
  });
});
