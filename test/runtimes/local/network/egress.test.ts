import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { probeNetworkNamespaces } from "../../../../src/runtimes/local/network/probe.ts";

/**
 * Egress beyond the host: an app's namespace reaches an address elsewhere (routed and masqueraded
 * by the host) under SLIPWAY_APP_EGRESS=internet, and not under none. The "host" is a fresh network
 * namespace of this test's own (its forwarding turned off, as on a machine where nothing turned it on),
 * joined by a veth to an "outside" namespace that serves on 198.51.100.2 (TEST-NET-2): the
 * machine's own network and settings are not touched.
 */

const probe = await probeNetworkNamespaces();
const skip = probe.ok ? false : `network namespaces are off here: ${probe.detail}`;
const tag = randomBytes(3).toString("hex");
const HOST_NS = `slipway-eg-host-${tag}`;
const OUT_NS = `slipway-eg-out-${tag}`;
const OUTSIDE = "198.51.100.2";
const PORT = 8080;

function sh(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { timeout: 60_000 }, (err, out, stderr) =>
      err ? reject(new Error(`${file} ${args.join(" ")}: ${stderr || err.message}`)) : resolve(String(out)),
    ),
  );
}

/** In the stand-in host: a deployment's namespace with `egress`, and what it got from outside. */
async function fromApp(
  slots: string,
  egress: "internet" | "none",
): Promise<{ answer: string; forward: string }> {
  const out = await sh("ip", [
    "netns",
    "exec",
    HOST_NS,
    process.execPath,
    "--import",
    "tsx",
    join(import.meta.dirname, "..", "..", "..", "helpers", "egress-host.ts"),
    slots,
    tag,
    egress,
    OUTSIDE,
    String(PORT),
  ]);
  return JSON.parse(out.trim().split("\n").at(-1) ?? "{}") as { answer: string; forward: string };
}

describe("egress beyond the host", { skip }, () => {
  let slots: string;
  let server: ChildProcess | undefined;

  before(async () => {
    slots = await mkdtemp(join(tmpdir(), "slipway-eg-slots-"));
    await sh("ip", ["netns", "add", HOST_NS]);
    await sh("ip", ["netns", "add", OUT_NS]);
    const inHost = (...args: string[]) => sh("ip", ["netns", "exec", HOST_NS, ...args]);
    const inOut = (...args: string[]) => sh("ip", ["netns", "exec", OUT_NS, ...args]);
    await inHost("ip", "link", "set", "lo", "up");
    await inHost("ip", "link", "add", "xo0", "type", "veth", "peer", "name", "eth0", "netns", OUT_NS);
    await inHost("ip", "addr", "add", "198.51.100.1/30", "dev", "xo0");
    await inHost("ip", "link", "set", "xo0", "up");
    await inOut("ip", "link", "set", "lo", "up");
    await inOut("ip", "addr", "add", `${OUTSIDE}/30`, "dev", "eth0");
    await inOut("ip", "link", "set", "eth0", "up");
    // A new namespace copies the machine's forwarding (on once any Slipway namespace was made):
    // off here, as on a machine where nothing turned it on.
    await inHost("sysctl", "-qw", "net.ipv4.ip_forward=0");
    assert.equal((await inHost("cat", "/proc/sys/net/ipv4/ip_forward")).trim(), "0");
    const js = `require("net").createServer((s)=>s.end("hello from elsewhere")).listen(${PORT},"${OUTSIDE}",()=>console.log("up"))`;
    server = spawn("ip", ["netns", "exec", OUT_NS, process.execPath, "-e", js], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve) => server?.stdout?.once("data", () => resolve()));
  });
  after(async () => {
    server?.kill("SIGKILL");
    await sh("ip", ["netns", "del", OUT_NS]).catch(() => undefined);
    await sh("ip", ["netns", "del", HOST_NS]).catch(() => undefined);
    await rm(slots, { recursive: true, force: true });
  });

  it("under internet: reaches an address beyond the host, the host's forwarding turned on", async () => {
    const got = await fromApp(slots, "internet");
    assert.equal(got.answer, "hello from elsewhere");
    assert.equal(got.forward, "1");
  });

  it("under none: the same address is not reached", async () => {
    const got = await fromApp(slots, "none");
    assert.equal(got.answer, "closed");
  });
});
