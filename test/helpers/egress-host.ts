import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { NetworkNamespaces } from "../../src/runtimes/local/network/namespace.ts";

/**
 * Run by test/runtimes/local/network/egress.test.ts inside a fresh network namespace standing in for the host (its own
 * ip_forward, 0 at first, and its own nft tables): makes a deployment's namespace with the egress
 * policy given, and prints whether the app's namespace reaches `host:port` beyond that host.
 * Arguments: <slotsDir> <tag> <internet|none> <host> <port>.
 */
const [slotsDir = "", tag = "", egress = "", host = "", port = ""] = process.argv.slice(2);
if (egress !== "internet" && egress !== "none") throw new Error(`egress: ${egress}`);
const namespaces = new NetworkNamespaces({
  egress,
  allow: [],
  table: `slipway_eg_${tag}`,
  prefix: "te",
  namePrefix: `slipway-eg-${tag}-`,
  slotsDir,
});
try {
  const net = await namespaces.ensure(`app-${tag}-${egress}`);
  const js = `const s=require("net").connect(${Number(port)},"${host}");s.setTimeout(1500);s.on("data",(d)=>{console.log(String(d));process.exit(0)});s.on("error",()=>{console.log("closed");process.exit(0)});s.on("timeout",()=>{console.log("closed");process.exit(0)})`;
  const answer = await new Promise<string>((resolve, reject) =>
    execFile("nsenter", [`--net=${net.path}`, "--", process.execPath, "-e", js], (err, out) =>
      err ? reject(err) : resolve(String(out).trim()),
    ),
  );
  const forward = readFileSync("/proc/sys/net/ipv4/ip_forward", "utf8").trim();
  console.log(JSON.stringify({ answer, forward }));
} finally {
  await namespaces.closeAll();
}
