// Why over 300 lines: what sandboxed builds and apps can and cannot do, and the refusal without
// a sandbox, on one runtime.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { DeployError } from "../../../../src/runtimes/interface.ts";
import { takePort } from "../../../../src/runtimes/local/processes/ports.ts";
import {
  NO_SANDBOX_REFUSAL,
  UNSANDBOXED_WARNING,
} from "../../../../src/runtimes/local/protections/refusals.ts";
import { bwrapSkip, root } from "../../../helpers/bwrap.ts";
import {
  alive,
  cleanupTemp,
  hit,
  newRuntime,
  phase,
  spec,
  tempDir,
  waitFor,
  writeApp,
} from "../../../helpers/local-runtime.ts";
import { PROBE_APP_JS, type ProbeAnswer, probeQuery } from "../../../helpers/probe-app.ts";

const RANGE = { first: 310_000, last: 310_099 };
const skip = await bwrapSkip(RANGE);

/** Host processes whose real uid is `uid`. */
function processesOf(uid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const line = readFileSync(`/proc/${entry}/status`, "utf8")
        .split("\n")
        .find((l) => l.startsWith("Uid:"));
      if (line?.split(/\s+/)[1] === String(uid) && alive(Number(entry))) out.push(Number(entry));
    } catch {
      // gone while we looked
    }
  }
  return out;
}

/** The deployment's uid as recorded by the runtime. */
function uidOf(dataDir: string, deploymentId: string): number {
  return Number(readFileSync(join(dataDir, "apps", deploymentId, "uid"), "utf8"));
}

/** Runs `argv` on the host as `uid` (outside any sandbox): what the kernel allows that uid. */
function asUid(uid: number, argv: string[]) {
  return spawnSync("setpriv", [`--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "--", ...argv], {
    encoding: "utf8",
  });
}

function probeApp(dir: string, start = "node server.js"): string {
  return writeApp(dir, {
    config: { start, healthcheck: "/" },
    extra: { "server.js": PROBE_APP_JS },
  });
}

describe("local runtime: sandbox (bubblewrap)", { skip }, () => {
  after(cleanupTemp);

  it("a build runs confined: /app is writable, HOME is the deployment's, nothing of the host is there", async () => {
    const dataDir = tempDir();
    writeFileSync(join(dataDir, "master.key"), "MASTER-KEY-CONTENT\n", { mode: 0o600 });
    const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE });
    const s = spec(
      { kind: "directory", path: probeApp(tempDir()) },
      {
        installCommand: [
          "echo uid=$(id -u) pwd=$(pwd) home=$HOME",
          "echo built > built.txt && echo wrote-app",
          `cat ${join(dataDir, "master.key")} || echo no-master-key`,
          `ls ${dataDir} || echo no-data-dir`,
          "echo procs=$(ls /proc | grep -c '^[0-9]')",
          "cat /etc/shadow || echo no-shadow",
          "id -un",
        ].join("; "),
      },
    );
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    const log = ctx.text("build");
    const uid = root ? uidOf(dataDir, s.deploymentId) : process.getuid?.();
    assert.ok(ctx.lines.build.includes(`uid=${uid} pwd=/app home=/home/app`), log);
    assert.ok(ctx.lines.build.includes("wrote-app"), log);
    assert.ok(ctx.lines.build.includes("no-master-key"), log);
    assert.ok(ctx.lines.build.includes("no-data-dir"), log);
    assert.ok(ctx.lines.build.includes("no-shadow"), log);
    assert.ok(ctx.lines.build.includes("app"), "the sandbox's own user has a name");
    assert.ok(!log.includes("MASTER-KEY-CONTENT"));
    // sh, ls and grep, and bwrap's init: the build sees only its own processes.
    const procs = Number(ctx.lines.build.find((l) => l.startsWith("procs="))?.slice(6));
    assert.ok(procs > 0 && procs < 8, log);
    assert.ok(!log.includes(dataDir), "no host path of the data dir in the log");
    assert.ok(!log.includes(UNSANDBOXED_WARNING));
    const appDir = join(dataDir, "apps", s.deploymentId, s.revisionId, "app");
    assert.equal(readFileSync(join(appDir, "built.txt"), "utf8"), "built\n");
    if (root) {
      assert.ok(uid !== undefined && uid >= RANGE.first && uid <= RANGE.last);
      for (const f of ["built.txt", "server.js", "."]) assert.equal(statSync(join(appDir, f)).uid, uid);
      assert.equal(statSync(appDir).mode & 0o777, 0o700);
    }
  });

  it("an app runs confined: its uid, /app read-only, /tmp and HOME writable, only its own processes", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE });
    after(() => rt.close());
    const s = spec({ kind: "directory", path: probeApp(tempDir()) }, { env: { SECRET: "app-secret-value" } });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    await rt.activate(s, ctx);
    const res = await hit(rt, s.deploymentName, probeQuery([dataDir, "/root", "/etc/shadow"], [process.pid]));
    assert.equal(res.status, 200);
    const p = res.json() as unknown as ProbeAnswer;
    const uid = root ? uidOf(dataDir, s.deploymentId) : (process.getuid?.() ?? -1);
    assert.equal(
      p.status
        .find((l) => l.startsWith("Uid:"))
        ?.split(/\s+/)
        .slice(1)
        .join(" "),
      `${uid} ${uid} ${uid} ${uid}`,
    );
    assert.equal(p.cwd, "/app");
    assert.equal(p.home, "/home/app");
    assert.equal(p.writeApp.ok, false);
    assert.equal(p.writeApp.error, "EROFS");
    assert.equal(p.writeTmp.ok, true);
    assert.equal(p.writeHome.ok, true);
    for (const [path, a] of Object.entries(p.reads)) assert.equal(a.ok, false, `${path} was readable`);
    // Slipway's own pid means nothing in the app's PID namespace.
    assert.equal(p.pidEnvirons[String(process.pid)]?.ok, false);
    const cmdlines = Object.values(p.processes).map((a) => a.value ?? "");
    assert.ok(cmdlines.length <= 4, JSON.stringify(p.processes));
    assert.ok(cmdlines.some((c) => c.includes("node server.js")));
    assert.ok(!cmdlines.some((c) => c.includes("--test")), "the test runner is not visible");
    assert.ok(!ctx.text("deploy").includes(dataDir));
    assert.ok(!/\(pid/.test(ctx.text("deploy")), "no host pids in the deploy log");
    assert.ok(ctx.lines.deploy.some((l) => l.includes("probe listening in /app")));
    if (root) {
      // Its environment is out of reach of other uids: only root and the app itself may read it.
      const [hostPid] = processesOf(uid).filter((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("server.js"),
      );
      assert.ok(hostPid !== undefined);
      assert.match(readFileSync(`/proc/${hostPid}/environ`, "utf8"), /app-secret-value/);
      assert.notEqual(asUid(RANGE.last, ["cat", `/proc/${hostPid}/environ`]).status, 0);
    }
    await rt.teardown(s.deploymentId);
  });

  it("as root, deployments get distinct uids: one cannot read the other's files or signal its processes", {
    skip: root ? false : "needs root",
  }, async () => {
    const dataDir = tempDir();
    // Traversable on purpose: only the deployments' own modes and uids stand in the way here.
    chmodSync(dataDir, 0o755);
    const secretFile = join(dataDir, "root-only.txt");
    writeFileSync(secretFile, "root only\n", { mode: 0o600 });
    const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE });
    after(() => rt.close());
    const a = spec({ kind: "directory", path: probeApp(tempDir()) });
    const b = spec({ kind: "directory", path: probeApp(tempDir()) });
    for (const s of [a, b]) {
      const ctx = phase();
      await rt.prepare(s, ctx);
      await rt.build(s, ctx);
      await rt.activate(s, ctx);
    }
    const uidA = uidOf(dataDir, a.deploymentId);
    const uidB = uidOf(dataDir, b.deploymentId);
    assert.notEqual(uidA, uidB);
    const [pidB] = processesOf(uidB);
    assert.ok(pidB !== undefined, "B's app runs as B's uid");
    const appB = join(dataDir, "apps", b.deploymentId, b.revisionId, "app");
    // Control: B itself may do all of this, so a failure below is the uid's doing.
    assert.equal(asUid(uidB, ["ls", appB]).status, 0);
    assert.equal(asUid(uidB, ["kill", "-0", String(pidB)]).status, 0);
    const readOther = asUid(uidA, ["ls", appB]);
    assert.notEqual(readOther.status, 0);
    assert.match(readOther.stderr, /Permission denied/);
    const signal = asUid(uidA, ["kill", "-0", String(pidB)]);
    assert.notEqual(signal.status, 0);
    assert.match(signal.stderr, /Operation not permitted/);
    const rootFile = asUid(uidA, ["cat", secretFile]);
    assert.notEqual(rootFile.status, 0);
    assert.match(rootFile.stderr, /Permission denied/);
    await rt.teardown(a.deploymentId);
    await rt.teardown(b.deploymentId);
    assert.deepEqual(processesOf(uidA), []);
    assert.deepEqual(processesOf(uidB), []);
    // Torn down: the uid is free again.
    assert.equal(existsSync(join(dataDir, "runtime", "uids", String(uidA))), false);
  });

  it("stopping ends the whole sandbox, background processes included", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE });
    after(() => rt.close());
    const s = spec({ kind: "directory", path: probeApp(tempDir(), "sleep 300 & node server.js") });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    await rt.activate(s, ctx);
    const [entry] = JSON.parse(
      readFileSync(join(dataDir, "apps", s.deploymentId, "processes.json"), "utf8"),
    ) as { pid: number }[];
    assert.ok(entry !== undefined);
    const group = () =>
      readdirSync("/proc")
        .filter((n) => /^\d+$/.test(n))
        .filter((n) => {
          try {
            const stat = readFileSync(`/proc/${n}/stat`, "utf8");
            return (
              Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) === entry.pid && alive(Number(n))
            );
          } catch {
            return false;
          }
        });
    const cmdlines = group().map((n) => readFileSync(`/proc/${n}/cmdline`, "utf8"));
    assert.ok(
      cmdlines.some((c) => c.startsWith("sleep")),
      "the background sleep is in the recorded group",
    );
    assert.ok(
      cmdlines.some((c) => c.startsWith("bwrap")),
      "the recorded pid is bwrap's",
    );
    await rt.teardown(s.deploymentId);
    assert.deepEqual(group(), []);
  });

  it("an app that listens on a hard-coded port inside the sandbox fails soon, naming it and $PORT", {
    // Far below the health timeout: only the early verdict passes.
    timeout: 60_000,
  }, async () => {
    // Free now; handed out by the runtime's own allocator, so no replica is given it as $PORT.
    const wrong = await takePort();
    const rt = newRuntime(tempDir(), { sandbox: "bwrap", uidRange: RANGE, healthTimeoutMs: 300_000 });
    after(() => rt.close());
    const src = writeApp(tempDir(), {
      config: { start: "node wrong.js", healthcheck: "/" },
      extra: {
        "wrong.js": `console.log("PORT=" + process.env.PORT);
          require("node:http").createServer((q, r) => r.end()).listen(${wrong}, "0.0.0.0");`,
      },
    });
    const s = spec({ kind: "directory", path: src });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    await assert.rejects(rt.activate(s, ctx), (err: unknown) => {
      assert.ok(err instanceof DeployError);
      const port = ctx.lines.deploy.find((l) => l.startsWith("PORT="))?.slice(5);
      assert.equal(
        err.message,
        `process web.1 listens on port ${wrong}, not on $PORT (${port}): make it listen on the port in the PORT environment variable`,
      );
      return true;
    });
  });

  it("app processes outlive a killed Slipway; the next runtime ends them before starting again", async () => {
    const dataDir = tempDir();
    const s = spec({ kind: "directory", path: probeApp(tempDir()) });
    const host = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(import.meta.dirname, "..", "..", "..", "helpers", "local-runtime-host.ts"),
        dataDir,
        JSON.stringify(s),
        "bwrap",
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    host.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    await waitFor("the host to serve", () => out.includes("\n"), 60_000);
    const file = join(dataDir, "apps", s.deploymentId, "processes.json");
    const [old] = JSON.parse(readFileSync(file, "utf8")) as { pid: number }[];
    assert.ok(old !== undefined);
    host.kill("SIGKILL");
    await new Promise((r) => host.once("exit", r));
    assert.equal(alive(old.pid), true, "the sandbox outlived its host");
    const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE });
    after(() => rt.close());
    const ctx = phase();
    await rt.activate(s, ctx);
    assert.equal(alive(old.pid), false, "the leftover sandbox was ended");
    assert.equal((await hit(rt, s.deploymentName, "/")).status, 200);
    await rt.teardown(s.deploymentId);
  });
});

describe("local runtime: without a sandbox", () => {
  after(cleanupTemp);

  it("another organization's revision fetches and builds nothing and fails to deploy with how to enable the sandbox", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir, { sandbox: "none" });
    after(() => rt.close());
    const s = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      { trusted: false, installCommand: `touch ${join(dataDir, "ran")}` },
    );
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    await assert.rejects(
      rt.activate(s, ctx),
      (err: unknown) => err instanceof DeployError && err.message === NO_SANDBOX_REFUSAL,
    );
    assert.match(NO_SANDBOX_REFUSAL, /apt-get install bubblewrap/);
    assert.match(NO_SANDBOX_REFUSAL, /SLIPWAY_SANDBOX=auto or bwrap/);
    assert.equal(existsSync(join(dataDir, "ran")), false, "its install command never ran");
    assert.equal(existsSync(join(dataDir, "apps", s.deploymentId, s.revisionId)), false, "nothing fetched");
    assert.ok(ctx.lines.build.some((l) => l.includes("not building")));
    assert.ok(ctx.lines.deploy.some((l) => l.includes(NO_SANDBOX_REFUSAL)));
  });

  it("the first organization's revision still deploys, with a warning in its build and deploy logs", async () => {
    const warnings: string[] = [];
    const rt = newRuntime(tempDir(), {
      sandbox: "none",
      logger: { info: () => {}, warn: (_o, msg) => warnings.push(msg) },
    });
    after(() => rt.close());
    await rt.start();
    assert.ok(warnings.some((w) => w.includes("apps run unsandboxed")));
    const s = spec({ kind: "directory", path: writeApp(tempDir()) });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    await rt.activate(s, ctx);
    assert.ok(ctx.lines.build.includes(UNSANDBOXED_WARNING));
    assert.ok(ctx.lines.deploy.includes(UNSANDBOXED_WARNING));
    assert.equal((await hit(rt, s.deploymentName)).status, 200);
    await rt.teardown(s.deploymentId);
  });
});
