import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { DeployError } from "../../../../src/runtimes/interface.ts";
import {
  offFor,
  type ProtectionProbe,
  runProbes,
} from "../../../../src/runtimes/local/protections/probes.ts";
import { protectionRefusal, startRefusal } from "../../../../src/runtimes/local/protections/refusals.ts";
import { hostLauncher } from "../../../../src/runtimes/local/sandbox/launcher.ts";
import { bwrapSkip } from "../../../helpers/bwrap.ts";
import { cleanupTemp, newRuntime, phase, spec, tempDir, writeApp } from "../../../helpers/local-runtime.ts";

const RANGE = { first: 314_000, last: 314_099 };
const skip = await bwrapSkip(RANGE);

const NO_PYTHON = { python: "python3-not-installed" };
const NO_PIDS = { pidsCgroups: false, prlimit: "prlimit-not-installed" };

function logger() {
  const warnings: string[] = [];
  const infos: string[] = [];
  return {
    warnings,
    infos,
    logger: {
      info: (_o: object, m: string) => infos.push(m),
      warn: (_o: object, m: string) => warnings.push(m),
    },
  };
}

describe("protections: the aggregate", () => {
  it("offFor splits container protections from the sandbox's; a probe that throws counts as off", async () => {
    const probes = await runProbes([
      async () => ({ protection: "seccomp", ok: false, detail: "x" }),
      async () => ({ protection: "container isolation", ok: false, detail: "y" }),
      async () => ({ protection: "pids limit", ok: true, detail: "z" }),
      async () => {
        throw new Error("ip not found");
      },
    ]);
    assert.deepEqual(
      offFor(probes, "process").map((p) => p.protection),
      ["seccomp", "protection probe 4"],
    );
    assert.deepEqual(
      offFor(probes, "image").map((p) => p.protection),
      ["container isolation"],
    );
    assert.equal(probes[3]?.detail, "ip not found");
  });

  it("the refusal names the protections without host detail; the start refusal gives each fix", () => {
    const off: ProtectionProbe[] = [
      { protection: "seccomp", ok: false, detail: "python3 not found: apt-get install python3-seccomp" },
      { protection: "pids limit", ok: false, detail: "no writable pids cgroup here" },
    ];
    const refusal = protectionRefusal(off);
    assert.match(refusal, /\(seccomp, pids limit\)/);
    assert.match(refusal, /only the install's first organization may deploy/);
    assert.doesNotMatch(refusal, /apt-get|cgroup/);
    const start = startRefusal(off);
    assert.match(start, /^SLIPWAY_SANDBOX=bwrap/);
    assert.match(start, /seccomp: python3 not found: apt-get install python3-seccomp/);
    assert.match(start, /pids limit: no writable pids cgroup here/);
  });

  it("the host launcher joins the pids group, opens the filter as fd 3 and passes --seccomp 3 to bwrap", () => {
    const bwrap = { file: "bwrap", args: ["--unshare-pid", "--", "sh", "-c", "x"], cwd: "/" };
    const both = hostLauncher({ procsPath: "/cg/procs", prefix: [] }, "/data/seccomp.bpf", bwrap);
    assert.equal(both.file, "sh");
    assert.deepEqual(both.args.slice(2), [
      "sh",
      "/cg/procs",
      "/data/seccomp.bpf",
      "bwrap",
      "--seccomp",
      "3",
      "--unshare-pid",
      "--",
      "sh",
      "-c",
      "x",
    ]);
    assert.equal(both.args[1], 'echo $$ > "$1" && exec 3< "$2" && shift 2 && exec "$@"');
    const rlimit = hostLauncher({ prefix: ["prlimit", "--nproc=9:9", "--"] }, undefined, bwrap);
    assert.deepEqual(rlimit.args.slice(1, 6), ['shift 0 && exec "$@"', "sh", "prlimit", "--nproc=9:9", "--"]);
    assert.deepEqual(hostLauncher({ prefix: [] }, undefined, bwrap), bwrap);
  });
});

describe("protections: at start", { skip }, () => {
  after(cleanupTemp);

  it("SLIPWAY_SANDBOX=bwrap refuses to start without seccomp, naming it and the package", async () => {
    const rt = newRuntime(tempDir(), { sandbox: "bwrap", uidRange: RANGE, protections: NO_PYTHON });
    after(() => rt.close());
    await assert.rejects(rt.start(), (err: Error) => {
      assert.match(err.message, /SLIPWAY_SANDBOX=bwrap, but a protection is missing here \(seccomp: /);
      assert.match(err.message, /apt-get install python3-seccomp/);
      return true;
    });
  });

  it("SLIPWAY_SANDBOX=bwrap refuses to start without a pids limit, naming it", async () => {
    const rt = newRuntime(tempDir(), { sandbox: "bwrap", uidRange: RANGE, protections: NO_PIDS });
    after(() => rt.close());
    await assert.rejects(rt.start(), /protection is missing here \(pids limit: no writable pids cgroup here/);
  });

  it("SLIPWAY_SANDBOX=auto starts, logs each protection that is off, and only the first organization deploys", async () => {
    const log = logger();
    const rt = newRuntime(tempDir(), {
      sandbox: "auto",
      uidRange: RANGE,
      logger: log.logger,
      protections: { ...NO_PYTHON, ...NO_PIDS },
    });
    after(() => rt.close());
    await rt.start();
    assert.ok(
      log.warnings.some((w) => w.startsWith("protection off: seccomp: python3-not-installed not found")),
    );
    assert.ok(log.warnings.some((w) => w.startsWith("protection off: pids limit: ")));
    const other = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      { trusted: false, installCommand: "true" },
    );
    const ctx = phase();
    await rt.prepare(other, ctx);
    await rt.build(other, ctx);
    await assert.rejects(rt.activate(other, ctx), (err: unknown) => {
      assert.ok(err instanceof DeployError);
      assert.match(err.message, /lacks a tenant protection \(pids limit, seccomp\)/);
      return true;
    });
    assert.ok(ctx.lines.build.some((l) => l.includes("not building")));
    // The first organization's revision deploys.
    const own = spec({ kind: "directory", path: writeApp(tempDir()) });
    const mine = phase();
    await rt.prepare(own, mine);
    await rt.build(own, mine);
    await rt.activate(own, mine);
    await rt.teardown(own.deploymentId);
    await rt.teardown(other.deploymentId);
  });

  it("with every protection on, start logs them on and another organization's revision is not refused", async () => {
    const log = logger();
    const rt = newRuntime(tempDir(), { sandbox: "bwrap", uidRange: RANGE, logger: log.logger });
    after(() => rt.close());
    await rt.start();
    assert.ok(log.infos.some((m) => m.startsWith("protection on: seccomp: ")));
    assert.ok(log.infos.some((m) => m.startsWith("protection on: pids limit: 512 processes per deployment")));
    const other = spec({ kind: "directory", path: writeApp(tempDir()) }, { trusted: false });
    assert.equal(await rt.confiner.refusal(other), undefined);
  });

  it("a container protection that is off refuses other organizations' images only", async () => {
    const rt = newRuntime(tempDir(), {
      sandbox: "auto",
      uidRange: RANGE,
      protections: {
        otherProbes: [async () => ({ protection: "container isolation", ok: false, detail: "host network" })],
      },
    });
    after(() => rt.close());
    const image = spec({ kind: "image", imageUri: "docker.io/library/busybox:1" }, { trusted: false });
    assert.match((await rt.confiner.refusal(image)) ?? "", /\(container isolation\)/);
    const process = spec({ kind: "directory", path: writeApp(tempDir()) }, { trusted: false });
    assert.equal(await rt.confiner.refusal(process), undefined);
    assert.equal(await rt.confiner.refusal({ ...image, trusted: true }), undefined);
  });
});
