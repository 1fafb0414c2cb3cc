import assert from "node:assert/strict";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { cgroupSupport } from "../../../src/runtimes/local/processes/cgroup.ts";
import { cpuCgroupSupported } from "../../../src/runtimes/local/processes/cpu-cgroup.ts";
import type { LocalRuntime } from "../../../src/runtimes/local/runtime.ts";
import { cleanupTemp, hit, newRuntime, phase, spec, tempDir, writeApp } from "../../helpers/local-runtime.ts";

/**
 * A queue worker that reports its limits into $OUT/worker-<pid>.json, and spins (busy 100 ms at a
 * time) while the file $SPIN exists.
 */
const WORKER_JS = `
const fs = require("node:fs");
fs.writeFileSync(process.env.OUT + "/worker-" + process.pid + ".json", JSON.stringify({
  nodeOptions: process.env.NODE_OPTIONS,
  dataLimit: fs.readFileSync("/proc/self/limits", "utf8").split("\\n").find((l) => l.startsWith("Max data size")),
  cgroups: fs.readFileSync("/proc/self/cgroup", "utf8"),
}));
function loop() {
  const spin = fs.existsSync(process.env.SPIN);
  const until = Date.now() + 100;
  if (spin) while (Date.now() < until) {}
  setTimeout(loop, spin ? 0 : 100);
}
loop();
process.on("SIGTERM", () => process.exit(0));
`;

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("local runtime: queue workers' limits and cpu autoscaling", () => {
  const runtimes: LocalRuntime[] = [];
  after(async () => {
    await Promise.all(runtimes.map((rt) => rt.close()));
    cleanupTemp();
  });

  it("workers get the queue_* memory and cpu limits, scale up on cpu to queue_max_scale and back to queue_min_scale", async () => {
    const rt = newRuntime(tempDir(), {
      scaling: { windowMs: 1000, cooldownMs: 1000, tickMs: 200, queueCpuTarget: 0.3 },
    });
    runtimes.push(rt);
    const out = tempDir("slipway-worker-out-");
    const flag = join(out, "spin.flag");
    const app = writeApp(tempDir(), {
      config: { start: "node server.js", worker: "node worker.js", healthcheck: "/" },
      extra: { "worker.js": WORKER_JS },
    });
    const s = spec(
      { kind: "directory", path: app },
      {
        env: { OUT: out, SPIN: flag },
        resourceSpec: {
          memory_limit_mb: 256,
          cpu_limit: 1,
          queue_memory_limit_mb: 128,
          queue_cpu_limit: 0.5,
          queue_min_scale: 1,
          queue_max_scale: 2,
        },
      },
    );
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    await rt.activate(s, ctx);
    const deploy = () => ctx.text("deploy");
    assert.match(deploy(), /memory limit 256 MB per API process \(data segment limit; Node heap 192 MB\)/);
    assert.match(deploy(), /memory limit 128 MB per queue worker \(data segment limit; Node heap 96 MB\)/);
    assert.match(
      deploy(),
      /slipway: queue: 1 to 2 processes \(scaled on cpu, never to zero\): node worker\.js/,
    );
    assert.ok(!deploy().includes("resource_spec.queue_"), "no queue field is warned about");

    // The API process keeps its own limits; the worker has the queue ones.
    const web = (await hit(rt, s.deploymentName)).json();
    assert.equal(web.nodeOptions, "--max-old-space-size=192");
    const reports = () => readdirSync(out).filter((f) => f.startsWith("worker-"));
    await until("the worker reported", () => reports().length === 1);
    const worker = JSON.parse(readFileSync(join(out, reports()[0] ?? ""), "utf8")) as Record<string, string>;
    assert.equal(worker.nodeOptions, "--max-old-space-size=96");
    assert.match(worker.dataLimit ?? "", new RegExp(`Max data size\\s+${128 * 1024 * 1024}\\s`));
    const memory = await cgroupSupport();
    if (memory !== undefined) {
      const line = (worker.cgroups ?? "")
        .split("\n")
        .find((l) =>
          memory.version === 1 ? /:memory[:,]/.test(l) || /,memory:/.test(l) : l.startsWith("0::"),
        );
      const group = line?.split(":").slice(2).join(":") ?? "";
      const dir = join(memory.parent, group.slice(group.lastIndexOf("/") + 1));
      const file = memory.version === 1 ? "memory.limit_in_bytes" : "memory.max";
      assert.equal(readFileSync(join(dir, file), "utf8").trim(), String(128 * 1024 * 1024));
    }
    if (await cpuCgroupSupported()) {
      assert.match(deploy(), /cpu limit 0\.5 per queue worker \(cgroup cpu controller\)/);
      assert.match(deploy(), /cpu limit 1 per API process \(cgroup cpu controller\)/);
    }

    const queue = async () => (await rt.processes(s.deploymentId)).filter((p) => p.type === "queue");
    writeFileSync(flag, "x");
    try {
      await until(
        "two queue workers run",
        async () => (await queue()).filter((p) => p.state === "running").length === 2,
      );
    } finally {
      rmSync(flag);
    }
    assert.match(
      deploy(),
      /slipway: scaling queue workers from 1 to 2: average \d+% cpu per process over 1 s is above the target of 30% cpu/,
    );
    await until("back to one queue worker", async () => (await queue()).length === 1);
    assert.match(
      deploy(),
      /slipway: scaling queue workers from 2 to 1: \d+% cpu in all on average over 1 s needs 1/,
    );
    assert.match(deploy(), /slipway: worker\.2 stopped/);
    const api = (await rt.processes(s.deploymentId)).filter((p) => p.type === "api");
    assert.equal(api.length, 1, "the API processes are not scaled by the workers' cpu");
    await rt.teardown(s.deploymentId);
  });
});
