import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { after, describe, it } from "node:test";
import {
  cgroupSupport,
  createMemoryCgroup,
  type MemoryCgroup,
} from "../../../../src/runtimes/local/processes/cgroup.ts";

const MiB = 1024 * 1024;
const support = await cgroupSupport();
const skip = support === undefined ? "no writable memory cgroup controller on this machine" : false;

/** Runs `node -e script` inside `group` from its first instruction; resolves with how it ended. */
async function runIn(group: MemoryCgroup, script: string) {
  const child = spawn("sh", ["-c", `echo $$ > '${group.procsPath}' && exec node -e "$0"`, script], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => {
    out += c.toString();
  });
  const [code, signal] = (await once(child, "exit")) as [number | null, NodeJS.Signals | null];
  return { code, signal, out };
}

describe("local runtime: memory cgroups", { skip }, () => {
  const made: MemoryCgroup[] = [];
  after(async () => {
    for (const g of made) await g.remove();
  });
  const make = async (name: string, bytes: number) => {
    const g = await createMemoryCgroup(`${name}-${process.pid}`, bytes);
    assert.ok(g, "support was detected, so a group is made");
    made.push(g);
    return g;
  };

  it("a process over the limit is killed by the kernel; one under it runs", async () => {
    const g = await make("over", 64 * MiB);
    const hog = await runIn(
      g,
      "const a=[];for(let i=0;i<40;i++)a.push(Buffer.alloc(10*1024*1024,1));console.log('allocated')",
    );
    assert.equal(hog.signal, "SIGKILL");
    assert.equal(hog.out, "");
    const kills = await g.oomKills();
    if (kills !== undefined) assert.ok(kills >= 1);
    const small = await runIn(g, "const b=Buffer.alloc(8*1024*1024,1);console.log('ok', b.length)");
    assert.equal(small.code, 0);
    assert.match(small.out, /^ok 8388608/);
  });

  it("addPid moves a running process in; remove moves it back out, alive, and deletes the group", async () => {
    const g = await make("move", 256 * MiB);
    const sleeper = spawn("sleep", ["30"], { stdio: "ignore" });
    const pid = sleeper.pid;
    assert.ok(pid);
    try {
      await g.addPid(pid);
      assert.ok(readFileSync(g.procsPath, "utf8").split("\n").includes(String(pid)));
      await g.remove();
      assert.equal(existsSync(g.path), false);
      assert.equal(sleeper.exitCode, null, "the process was not killed");
      await g.remove();
    } finally {
      sleeper.kill("SIGKILL");
    }
  });

  it("refuses names that could leave the parent cgroup and limits that are not positive", async () => {
    await assert.rejects(createMemoryCgroup("../escape", MiB), /cgroup name/);
    await assert.rejects(createMemoryCgroup("a/b", MiB), /cgroup name/);
    await assert.rejects(createMemoryCgroup("ok", 0), /positive/);
  });
});
