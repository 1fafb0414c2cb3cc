import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { allowedDestinations } from "../../../../src/runtimes/local/network/allowed.ts";

describe("what a deployment's namespace may always reach", () => {
  const dir = mkdtempSync(join(tmpdir(), "slipway-allowed-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const resolvConf = join(dir, "resolv.conf");
  writeFileSync(resolvConf, "nameserver 10.255.0.53\nnameserver 127.0.0.53\noptions edns0\n");
  // Names are answered here, never by a real resolver.
  const names: Record<string, string[]> = {
    "mirror.internal": ["10.9.8.7"],
    "registry.npmjs.org": ["104.16.0.1"],
  };
  const resolve = async (host: string) => names[host] ?? [];

  it("the configured mirrors (even private), the resolvers and the allowed ranges; never the host's loopback", async () => {
    const got = await allowedDestinations({
      egress: "internet",
      egressAllow: ["10.1.0.0/16"],
      mirrors: ["http://mirror.internal:4873/", "https://192.168.5.5/simple/", "http://127.0.0.1:9000/"],
      resolvConf,
      resolve,
    });
    assert.deepEqual(got.sort(), ["10.1.0.0/16", "10.255.0.53", "10.9.8.7", "192.168.5.5"]);
  });

  it("without a mirror, npm's own registry only when egress is none (under internet it is public anyway)", async () => {
    const none = await allowedDestinations({
      egress: "none",
      egressAllow: [],
      mirrors: [],
      resolvConf,
      resolve,
    });
    assert.deepEqual(none.sort(), ["10.255.0.53", "104.16.0.1"]);
    const internet = await allowedDestinations({
      egress: "internet",
      egressAllow: [],
      mirrors: [],
      resolvConf,
      resolve,
    });
    assert.deepEqual(internet, ["10.255.0.53"]);
  });
});
