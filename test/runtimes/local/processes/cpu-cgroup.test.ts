import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { controllerSupport } from "../../../../src/runtimes/local/processes/cgroup.ts";
import {
  type CpuCgroup,
  cpuQuotaUs,
  createCpuCgroup,
} from "../../../../src/runtimes/local/processes/cpu-cgroup.ts";
import type { LocalRuntime } from "../../../../src/runtimes/local/runtime.ts";
import {
  cleanupTemp,
  hit,
  newRuntime,
  phase,
  spec,
  tempDir,
  writeApp,
} from "../../../helpers/local-runtime.ts";

const support = await controllerSupport("cpu");
const skip = support === undefined ? "no writable cpu cgroup controller on this machine" : false;

describe("local runtime: cpu limits", () => {
  it("a quota is the share of a 100 ms period, at least the kernel's 1 ms", () => {
    assert.equal(cpuQuotaUs(0.5), 50_000);
    assert.equal(cpuQuotaUs(2), 200_000);
    assert.equal(cpuQuotaUs(0.001), 1000);
  });

  it("refuses names and limits that are not usable", async () => {
    await assert.rejects(createCpuCgroup("../escape", 1), /not usable/);
    await assert.rejects(createCpuCgroup("ok-name", 0), /positive/);
    await assert.rejects(createCpuCgroup("ok-name", Number.NaN), /positive/);
  });
});

describe("local runtime: cpu cgroups", { skip }, () => {
  const made: CpuCgroup[] = [];
  const runtimes: LocalRuntime[] = [];
  after(async () => {
    for (const g of made) await g.remove();
    await Promise.all(runtimes.map((rt) => rt.close()));
    cleanupTemp();
  });

  it("a busy process in a group of 0.1 cpu is throttled by the kernel", async () => {
    const g = await createCpuCgroup(`throttle-${process.pid}`, 0.1);
    assert.ok(g?.procsPath, "support was detected, so a group is made");
    made.push(g);
    const dir = join(g.procsPath, "..");
    const quota = support?.version === 1 ? readFileSync(join(dir, "cpu.cfs_quota_us"), "utf8").trim() : "";
    if (support?.version === 1) assert.equal(quota, "10000");
    else assert.equal(readFileSync(join(dir, "cpu.max"), "utf8").trim(), "10000 100000");
    const child = spawn(
      "sh",
      ["-c", `echo $$ > '${g.procsPath}' && exec node -e "const end=Date.now()+600;while(Date.now()<end){}"`],
      { stdio: "ignore" },
    );
    await once(child, "exit");
    const stat = readFileSync(join(dir, "cpu.stat"), "utf8");
    const throttled = Number(/^nr_throttled (\d+)$/m.exec(stat)?.[1] ?? "0");
    assert.ok(throttled > 0, stat);
  });

  it("cpu_limit puts each app process in its own cpu group, removed with it", async () => {
    const rt = newRuntime(tempDir());
    runtimes.push(rt);
    const s = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      { resourceSpec: { cpu: 0.25, cpu_limit: 0.5 } },
    );
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    await rt.activate(s, ctx);
    assert.match(ctx.text("deploy"), /cpu limit 0\.5 per API process \(cgroup cpu controller\)/);
    assert.ok(!ctx.text("deploy").includes("resource_spec.cpu_limit is not enforced"));
    const body = (await hit(rt, s.deploymentName)).json();
    const cgroups = String(body.cgroups).split("\n");
    const line =
      support?.version === 1
        ? cgroups.find((l) => /:cpu[:,]/.test(l) || /,cpu:/.test(l))
        : cgroups.find((l) => l.startsWith("0::"));
    const group = line?.split(":").slice(2).join(":") ?? "";
    assert.match(group, /slipway-(cpu|app)-[0-9a-f]{12}$/, String(body.cgroups));
    const dir = join(support?.parent ?? "", group.slice(group.lastIndexOf("/") + 1));
    const limit =
      support?.version === 1
        ? readFileSync(join(dir, "cpu.cfs_quota_us"), "utf8").trim()
        : (readFileSync(join(dir, "cpu.max"), "utf8").trim().split(" ")[0] ?? "");
    assert.equal(limit, "50000");
    await rt.teardown(s.deploymentId);
    assert.equal(existsSync(dir), false, "the group is removed with the app");
  });
});
