import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { describe, it } from "node:test";
import { CpuMeter, groupCpuSeconds } from "../../../../src/runtimes/local/processes/cpu-usage.ts";
import { killGroup } from "../../../../src/runtimes/shared/process-group.ts";

describe("cpu use of process groups (queue worker autoscaling)", () => {
  it("counts the cpu time of every process of a group, children included, and grows while they spin", async () => {
    // A group of a shell and a child that spins: the child's time must count for the group.
    const child = spawn("sh", ["-c", "node -e 'for(;;){}' & wait"], { detached: true, stdio: "ignore" });
    const pgid = child.pid;
    assert.ok(pgid !== undefined);
    try {
      let first: number | undefined;
      const deadline = Date.now() + 30_000;
      for (;;) {
        const seconds = (await groupCpuSeconds([pgid, 999_999_999])).get(pgid);
        assert.ok(seconds !== undefined, "the group is found");
        first ??= seconds;
        if (seconds - first >= 0.2) break;
        assert.ok(Date.now() < deadline, "the spinning child's cpu time never grew");
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal((await groupCpuSeconds([999_999_999])).size, 0, "a group with no process is missing");
    } finally {
      await killGroup(pgid, 1000);
    }
  });

  it("the meter sums cpu over wall time per group, scaled by each group's cpus; new and restarted groups start at the next read", async () => {
    let now = new Map<number, number>();
    const meter = new CpuMeter(async () => now);
    now = new Map([[10, 5]]);
    assert.equal(await meter.sample([{ pgid: 10, cpus: 1 }], 0), 0, "first sight: no rate yet");
    now = new Map([
      [10, 6],
      [20, 100],
    ]);
    // Group 10: 1 cpu second in 2 wall seconds = 50%; group 20 (limit 0.5) is new.
    const two = [
      { pgid: 10, cpus: 1 },
      { pgid: 20, cpus: 0.5 },
    ];
    assert.equal(await meter.sample(two, 2000), 0.5);
    now = new Map([
      [10, 6],
      [20, 100.5],
    ]);
    // Group 20: 0.5 s in 1 s against a limit of 0.5 cpu = 100%; group 10 idle.
    assert.equal(await meter.sample(two, 3000), 1);
    now = new Map([[10, 1]]);
    assert.equal(await meter.sample(two, 4000), 0, "a restarted group (its time went down) and a gone one");
  });
});
