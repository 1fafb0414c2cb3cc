import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { type Engine, execEngine } from "../../../../src/runtimes/engine/engine.ts";
import type { RevisionSpec } from "../../../../src/runtimes/interface.ts";
import {
  deploymentNetwork,
  firewallTable,
} from "../../../../src/runtimes/local/containers/container-isolation.ts";
import type { LocalRuntime } from "../../../../src/runtimes/local/runtime.ts";
import { TestImages, testEngine } from "../../../helpers/container-images.ts";
import { cleanupTemp, hit, newRuntime, phase, spec, tempDir } from "../../../helpers/local-runtime.ts";

/**
 * SLIPWAY_APP_EGRESS and SLIPWAY_APP_EGRESS_ALLOW reach containers: the runtime hands the policy to
 * the container's firewall, read back from nftables once the container runs. No traffic is sent
 * to the allowed range: the installed rules are the proof.
 */

const engine: Engine | undefined = await testEngine();
const ALLOWED = "10.123.0.0/16";

describe("local runtime: containers follow the egress policy", () => {
  const images = engine === undefined ? undefined : new TestImages(engine);
  const skip = images === undefined ? "no container engine or busybox here (CI requires them)" : false;
  let rt: LocalRuntime | undefined;
  let s: RevisionSpec;

  before(async () => {
    if (images === undefined) return;
    const image = await images.build("egress", "1", { version: "egress" });
    rt = newRuntime(tempDir(), {
      healthTimeoutMs: 20_000,
      egress: { egress: "none", egressAllow: [ALLOWED] },
    });
    s = spec({ kind: "image", imageUri: image });
    await rt.prepare(s, phase());
    await rt.build(s, phase());
    await rt.activate(s, phase());
  });
  after(async () => {
    await rt?.close();
    await images?.cleanup(rt === undefined ? [] : [rt.containers.owner]);
    cleanupTemp();
  });

  it("egress none: the bridge's forward chain accepts the allowed range, then ends in a drop", {
    skip,
  }, async () => {
    assert.ok(rt && engine);
    assert.deepEqual((await hit(rt, s.deploymentName)).json(), { version: "egress" });
    const net = deploymentNetwork(rt.containers.owner, s.deploymentId);
    const inspected = await execEngine(engine, [
      "network",
      "inspect",
      "--format",
      "{{.NetworkInterface}}",
      net,
    ]);
    const iface = inspected.stdout.trim();
    assert.ok(inspected.ok && iface, inspected.stderr);
    const table = execFileSync("nft", ["list", "table", "inet", firewallTable(net)], { encoding: "utf8" });
    // The forward chain's rules, up to the line closing it.
    const lines = table.split("\n").map((l) => l.trim());
    const start = lines.indexOf("chain forward {");
    const rules = lines.slice(start + 1, lines.indexOf("}", start)).filter((l) => !l.startsWith("type "));
    assert.ok(start >= 0 && rules.length > 0, table);
    assert.ok(rules.includes(`iifname "${iface}" ip daddr ${ALLOWED} accept`), table);
    assert.equal(rules.at(-1), `iifname "${iface}" drop`, table);
    // No internet rule is left: the private-range drop of "internet" is not there.
    assert.doesNotMatch(table, /169\.254\.0\.0\/16/);
  });
});
