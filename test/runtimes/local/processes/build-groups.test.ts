import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  buildRecordsDir,
  unwatchBuildGroups,
} from "../../../../src/runtimes/local/processes/build-groups.ts";
import {
  alive,
  cleanupTemp,
  newRuntime,
  spec,
  tempDir,
  waitFor,
  writeApp,
} from "../../../helpers/local-runtime.ts";

/** An npm app whose build step writes its shell's pid and then sleeps for ever (well, 10 minutes). */
function slowBuildApp(pidFile: string): string {
  return writeApp(tempDir(), {
    config: { start: "node server.js", healthcheck: "/" },
    extra: {
      "package.json": JSON.stringify({
        name: "slow-build",
        version: "1.0.0",
        scripts: { build: `echo $$ > ${pidFile}; exec sleep 600`, start: "node server.js" },
      }),
      "package-lock.json": JSON.stringify({
        name: "slow-build",
        version: "1.0.0",
        lockfileVersion: 3,
        requires: true,
        packages: { "": { name: "slow-build", version: "1.0.0" } },
      }),
    },
  });
}

/**
 * The sweep's finding: a SIGKILLed Slipway left its build processes running until they finished,
 * and the next process neither adopted nor ended them. Now each process records its build groups
 * under the data dir, and the next runtime's start ends those of processes that are gone.
 */
describe("build processes of a killed Slipway", () => {
  after(cleanupTemp);

  it("are ended when the next runtime starts; a live process's record is left alone", async (t) => {
    const dataDir = tempDir();
    const pidFile = join(tempDir(), "build.pid");
    const s = spec({ kind: "directory", path: slowBuildApp(pidFile) });
    const host = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(import.meta.dirname, "..", "..", "..", "helpers", "build-host.ts"),
        dataDir,
        JSON.stringify(s),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    host.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const exited = new Promise((resolve) => host.once("exit", resolve));
    t.after(() => {
      if (host.exitCode === null && host.signalCode === null) host.kill("SIGKILL");
    });
    await waitFor(
      `the build step's pid (host output: ${out})`,
      () => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "",
      120_000,
    );
    const step = Number(readFileSync(pidFile, "utf8").trim());
    t.after(() => {
      if (alive(step)) process.kill(step, "SIGKILL");
    });
    assert.ok(alive(step), "the build step runs");
    const records = readdirSync(buildRecordsDir(dataDir));
    assert.deepEqual(
      records,
      [`${host.pid}-${records[0]?.split("-")[1]}`],
      "the host recorded its build groups",
    );

    // A runtime starting while the host lives leaves its build alone.
    const early = newRuntime(dataDir);
    await early.start();
    await early.close();
    unwatchBuildGroups(dataDir);
    assert.ok(alive(step), "a live Slipway's build is not touched");

    host.kill("SIGKILL");
    await exited;
    assert.ok(alive(step), "the build outlives its killed Slipway");
    assert.doesNotMatch(out, /build ended/);

    const next = newRuntime(dataDir);
    try {
      await next.start();
      await waitFor("the leftover build step to end", () => !alive(step), 10_000);
      assert.deepEqual(
        readdirSync(buildRecordsDir(dataDir)).filter((f) => !f.startsWith(`${process.pid}-`)),
        [],
        "the dead host's record is gone",
      );
    } finally {
      await next.close();
      unwatchBuildGroups(dataDir);
    }
  });
});
