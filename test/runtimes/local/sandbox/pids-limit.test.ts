import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { controllerSupport } from "../../../../src/runtimes/local/processes/cgroup.ts";
import { choosePidsLimit } from "../../../../src/runtimes/local/sandbox/pids-limit.ts";
import { bwrapSkip, root } from "../../../helpers/bwrap.ts";
import { cleanupTemp, newRuntime, phase, spec, tempDir, writeApp } from "../../../helpers/local-runtime.ts";

const RANGE = { first: 312_000, last: 312_099 };
const skip = await bwrapSkip(RANGE);
const pidsCgroup = await controllerSupport("pids");

/**
 * A sandboxed shell that tries to start 2,000 background processes and records how many it
 * started; dash exits at the first fork that fails. Only builtins run after it (no fork needed).
 */
const FORKS = 2000;
const FORK_LOOP = [
  `sh -c 'n=0; while [ $n -lt ${FORKS} ]; do sleep 60 & n=$((n+1)); echo $n > /tmp/forks; done; echo all-started'`,
  "read n < /tmp/forks",
  "echo forks=$n",
].join("; ");

function forksOf(lines: string[]): number {
  const line = lines.find((l) => l.startsWith("forks="));
  assert.ok(line !== undefined, lines.join("\n"));
  return Number(line.slice("forks=".length));
}

/** Builds a revision whose install step is `command`; its build log and the runtime. */
async function buildWith(command: string, opts: Parameters<typeof newRuntime>[1]) {
  const dataDir = tempDir();
  const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE, ...opts });
  after(() => rt.close());
  const s = spec({ kind: "directory", path: writeApp(tempDir()) }, { installCommand: command });
  const ctx = phase();
  await rt.prepare(s, ctx);
  await rt.build(s, ctx);
  return { rt, s, ctx, dataDir };
}

describe("local runtime: pids limit per deployment", { skip }, () => {
  after(cleanupTemp);

  it("2,000 forks in a build are stopped at SLIPWAY_APP_PIDS_MAX (pids cgroup), the app's processes counted too", {
    skip: pidsCgroup === undefined ? "no writable pids cgroup here" : false,
  }, async () => {
    const { rt, s, ctx } = await buildWith(FORK_LOOP, { pidsMax: 64 });
    const forks = forksOf(ctx.lines.build);
    assert.ok(forks < 64, `started ${forks} of ${FORKS}: ${ctx.text("build")}`);
    assert.ok(!ctx.lines.build.includes("all-started"));
    assert.ok(
      ctx.lines.build.some((l) => /fork/i.test(l)),
      ctx.text("build"),
    );
    assert.ok(pidsCgroup !== undefined);
    const group = join(pidsCgroup.parent, `slipway-pids-${s.deploymentId}`);
    assert.equal(readFileSync(join(group, "pids.max"), "utf8").trim(), "64");
    // The app of the same deployment joins the same group.
    const deploy = phase();
    await rt
      .activate(s, deploy)
      .catch((err: Error) => assert.fail(`${err.message}\n${deploy.text("deploy")}`));
    const procs = readFileSync(join(group, "cgroup.procs"), "utf8").trim().split("\n").filter(Boolean);
    assert.ok(procs.length > 0, "the app's processes are in the deployment's group");
    await rt.teardown(s.deploymentId);
    assert.equal(existsSync(group), false, "teardown removes the group");
  });

  it("without a pids cgroup, as root: RLIMIT_NPROC on the deployment's uid stops them", {
    skip: root ? false : "RLIMIT_NPROC needs a uid per deployment (root)",
  }, async () => {
    const { rt, s, ctx } = await buildWith(FORK_LOOP, { pidsMax: 64, protections: { pidsCgroups: false } });
    const forks = forksOf(ctx.lines.build);
    assert.ok(forks < 64, `started ${forks} of ${FORKS}: ${ctx.text("build")}`);
    assert.ok(
      ctx.lines.build.some((l) => /fork/i.test(l)),
      ctx.text("build"),
    );
    await rt.teardown(s.deploymentId);
  });

  it("under a higher limit the same kind of loop starts all it asks for (the limit is what stops it)", async () => {
    const loop = FORK_LOOP.replace(String(FORKS), "200");
    const { rt, s, ctx } = await buildWith(loop, { pidsMax: 4096 });
    assert.equal(forksOf(ctx.lines.build), 200, ctx.text("build"));
    assert.ok(ctx.lines.build.includes("all-started"));
    await rt.teardown(s.deploymentId);
  });

  it("the probe is off where there is neither a pids cgroup nor a working prlimit, and says how to fix it", async () => {
    const off = await choosePidsLimit({
      max: 512,
      cgroups: false,
      prlimit: "prlimit-not-installed",
      root: true,
    });
    assert.equal(off.probe.protection, "pids limit");
    assert.equal(off.probe.ok, false);
    assert.match(off.probe.detail, /prlimit-not-installed/);
    assert.match(off.probe.detail, /util-linux/);
    assert.deepEqual(await off.prepare("dep-x"), { prefix: [] });
    const notRoot = await choosePidsLimit({ max: 512, cgroups: false, root: false });
    assert.equal(notRoot.probe.ok, false);
    assert.match(notRoot.probe.detail, /RLIMIT_NPROC needs a uid per deployment/);
  });
});
