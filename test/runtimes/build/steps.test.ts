import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { detectNode } from "../../../src/runtimes/build/plan/node.ts";
import { withGivenCommands } from "../../../src/runtimes/build/plan/plan.ts";
import { failureSummary } from "../../../src/runtimes/build/steps.ts";
import { BuildError } from "../../../src/runtimes/interface.ts";
import {
  alive,
  cleanupTemp,
  newRuntime,
  phase,
  spec,
  tempDir,
  waitFor,
  writeApp,
} from "../../helpers/local-runtime.ts";

/** The steps a Node source's plan runs: what detection found, with the deployment's commands in their place. */
async function buildSteps(appDir: string, install: string | undefined, build: string | undefined) {
  const found = await detectNode({
    appDir,
    config: { healthcheck: "/", env: {} },
    indexes: { pipExtra: [] },
    log: () => {},
  });
  return withGivenCommands(found?.steps ?? [], install, build);
}

describe("local runtime: build", () => {
  after(cleanupTemp);

  it("runs the install and build commands in the source and records the app config", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const s = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      { installCommand: "echo installing; echo installed > installed.txt", buildCommand: "echo built >&2" },
    );
    const ctx = phase();
    await rt.prepare(s, ctx);
    assert.equal(await rt.isBuilt(s), false);
    await rt.build(s, ctx);
    const log = ctx.lines.build;
    assert.ok(log.includes("$ echo installing; echo installed > installed.txt"));
    assert.ok(log.includes("installing"));
    assert.ok(log.includes("built"), "stderr lines are in the build log");
    const revisionDir = join(dataDir, "apps", s.deploymentId, s.revisionId);
    assert.equal(readFileSync(join(revisionDir, "app", "installed.txt"), "utf8"), "installed\n");
    assert.deepEqual(JSON.parse(readFileSync(join(revisionDir, "build.json"), "utf8")), {
      version: 1,
      kind: "process",
      start: "node server.js",
      healthcheck: "/",
      env: { GREETING: "hello" },
    });
    assert.equal(await rt.isBuilt(s), true);
  });

  it("defaults to npm install, npm run build and npm start from package.json", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const src = writeApp(tempDir(), {
      config: undefined,
      extra: {
        "package.json": JSON.stringify({
          name: "tiny",
          version: "1.0.0",
          // A local package: npm installs it without a registry.
          dependencies: { "local-dep": "file:./local-dep" },
          scripts: {
            build: "node -e \"require('fs').writeFileSync('dist.txt','ok')\"",
            start: "node server.js",
          },
        }),
        "local-dep/package.json": JSON.stringify({ name: "local-dep", version: "1.0.0" }),
      },
    });
    const s = spec({ kind: "directory", path: src }, { frameworkConfigPath: undefined });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    assert.ok(ctx.lines.build.includes("$ npm install"), ctx.text("build"));
    assert.ok(ctx.lines.build.includes("$ npm run build"), ctx.text("build"));
    const revisionDir = join(dataDir, "apps", s.deploymentId, s.revisionId);
    assert.equal(readFileSync(join(revisionDir, "app", "dist.txt"), "utf8"), "ok");
    const record = JSON.parse(readFileSync(join(revisionDir, "build.json"), "utf8")) as { start: string };
    assert.equal(record.start, "npm start");
    assert.equal(existsSync(join(revisionDir, "app", "node_modules", "local-dep")), true, "installed");
    // npm's cache lives in the deployment's own HOME, not in the server user's home.
    assert.equal(existsSync(join(dataDir, "apps", s.deploymentId, "home", ".npm")), true);
  });

  it("picks npm ci when a lockfile exists, and no step when there is no package.json", async () => {
    const withDeps = JSON.stringify({ dependencies: { "left-pad": "1.3.0" } });
    const withLock = writeApp(tempDir(), { extra: { "package.json": withDeps, "package-lock.json": "{}" } });
    assert.deepEqual(await buildSteps(withLock, undefined, undefined), [
      { label: "install", command: "npm ci" },
    ]);
    assert.deepEqual(await buildSteps(writeApp(tempDir()), undefined, undefined), []);
    assert.deepEqual(await buildSteps(withLock, "make deps", " "), [
      { label: "install", command: "make deps" },
    ]);
  });

  it("skips the install when package.json declares no dependencies and no install scripts", async () => {
    const steps = (pkg: unknown, extra: Record<string, string> = {}) =>
      buildSteps(
        writeApp(tempDir(), { extra: { "package.json": JSON.stringify(pkg), ...extra } }),
        undefined,
        undefined,
      );
    const start = { scripts: { start: "node server.js" } };
    assert.deepEqual(await steps(start), []);
    assert.deepEqual(await steps(start, { "package-lock.json": "{}" }), []);
    assert.deepEqual(await steps({ ...start, dependencies: {}, devDependencies: {} }), []);
    for (const needs of [
      { devDependencies: { typescript: "5" } },
      { optionalDependencies: { fsevents: "2" } },
      { workspaces: ["packages/*"] },
      { scripts: { postinstall: "node setup.js" } },
      { scripts: { prepare: "node setup.js" } },
    ]) {
      assert.deepEqual(
        await steps(needs),
        [{ label: "install", command: "npm install" }],
        JSON.stringify(needs),
      );
    }
    // Unreadable package.json: npm decides (and says what is wrong with it).
    assert.deepEqual(await steps("not json"), [{ label: "install", command: "npm install" }]);
    // A build script still runs, and an explicit install command always does.
    assert.deepEqual(await steps({ scripts: { build: "node build.js" } }), [
      { label: "build", command: "npm run build" },
    ]);
    const dir = writeApp(tempDir(), { extra: { "package.json": JSON.stringify(start) } });
    assert.deepEqual(await buildSteps(dir, "make deps", undefined), [
      { label: "install", command: "make deps" },
    ]);
  });

  it("logs that it skipped the install", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const src = writeApp(tempDir(), { extra: { "package.json": JSON.stringify({ name: "plain" }) } });
    const s = spec({ kind: "directory", path: src });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    assert.ok(!ctx.text("build").includes("$ npm"), ctx.text("build"));
    assert.match(ctx.text("build"), /No npm install: package\.json declares no dependencies/);
    assert.equal(await rt.isBuilt(s), true);
  });

  it("a failing install is a BuildError with its output in the log, and leaves no directory", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const s = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      {
        installCommand: "echo 'resolving deps'; echo 'E404 not found: left-pad' >&2; exit 7",
        buildCommand: "echo never",
      },
    );
    const ctx = phase();
    await rt.prepare(s, ctx);
    await assert.rejects(rt.build(s, ctx), (err: unknown) => {
      assert.ok(err instanceof BuildError);
      // The step's own last lines, not only its exit code: they become the status_message.
      assert.equal(
        err.message,
        "install command \"echo 'resolving deps'; echo 'E404 not found: left-pad' >&2; exit 7\" exited with code 7: resolving deps | E404 not found: left-pad",
      );
      return true;
    });
    assert.ok(ctx.lines.build.includes("E404 not found: left-pad"));
    assert.ok(!ctx.lines.build.includes("never"), "the build step does not run after a failed install");
    assert.equal(existsSync(join(dataDir, "apps", s.deploymentId, s.revisionId)), false);
    assert.equal(await rt.isBuilt(s), false);
  });

  it("a failing build command is a BuildError", async () => {
    const rt = newRuntime(tempDir());
    const s = spec({ kind: "directory", path: writeApp(tempDir()) }, { buildCommand: "false" });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await assert.rejects(rt.build(s, ctx), { message: 'build command "false" exited with code 1' });
  });

  it("a failing shell step's message carries its error lines, not the noise before them", async () => {
    const rt = newRuntime(tempDir());
    const noise = Array.from({ length: 60 }, (_, i) => `echo step ${i}`).join("; ");
    const s = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      {
        buildCommand: `${noise}; echo 'ERROR: config.yml: unknown key "sevrer"' >&2; echo 'hint: see the docs'; exit 2`,
      },
    );
    const ctx = phase();
    await rt.prepare(s, ctx);
    await assert.rejects(rt.build(s, ctx), (err: unknown) => {
      assert.ok(err instanceof BuildError);
      assert.match(
        err.message,
        /^build command ".*" exited with code 2: ERROR: config\.yml: unknown key "sevrer"$/,
      );
      return true;
    });
    assert.match(ctx.text("build"), /^error: build command .* exited with code 2: ERROR: config\.yml/m);
  });

  it("a failing npm install names the package npm could not find", async () => {
    const rt = newRuntime(tempDir());
    const missing = "slipway-test-no-such-package-28";
    const src = writeApp(tempDir(), {
      extra: { "package.json": JSON.stringify({ name: "x", dependencies: { [missing]: "1.0.0" } }) },
    });
    const s = spec({ kind: "directory", path: src });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await assert.rejects(rt.build(s, ctx), (err: unknown) => {
      assert.ok(err instanceof BuildError);
      assert.match(
        err.message,
        /^install command "npm install" exited with code 1: npm (error|ERR!) 404 Not Found - GET \S+ \| /,
      );
      assert.ok(err.message.includes(`'${missing}@1.0.0'`), err.message);
      assert.ok(err.message.length < 600, err.message);
      assert.ok(!err.message.includes("complete log"), err.message);
      return true;
    });
  });

  it("the summary prefers error lines, drops repeats and noise, and is capped", () => {
    assert.equal(failureSummary(["a", "b", "c", "d", "e", "f", ""]), "b | c | d | e | f");
    assert.equal(failureSummary([]), "");
    assert.equal(
      failureSummary([
        "Collecting nosuchpkg",
        "ERROR: Could not find a version",
        "ERROR: No matching distribution found for nosuchpkg",
      ]),
      "ERROR: Could not find a version | ERROR: No matching distribution found for nosuchpkg",
    );
    assert.equal(
      failureSummary(["npm error 404", "npm error 404", "npm error x ERR_Y", "npm error x ERR_Y"]),
      "npm error x ERR_Y",
    );
    const long = failureSummary(Array.from({ length: 9 }, (_, i) => `error ${i}: ${"x".repeat(200)}`));
    assert.equal(long.length, 500);
    assert.ok(long.endsWith("…"));
  });

  for (const [title, files, path, expected] of [
    ["a missing app config", { config: undefined }, "app.json", /app config file "app\.json" was not found/],
    ["app config that is not JSON", { config: "{start: node" }, "app.json", /is not valid JSON/],
    ["app config that is not an object", { config: "[]" }, "app.json", /must hold a JSON object/],
    [
      "a start that is not a string",
      { config: { start: 42 } },
      "app.json",
      /"start" must be a non-empty string/,
    ],
    ["no start and no start script", { config: { env: {} } }, "app.json", /has no "start" command/],
    [
      "a healthcheck that is not a path",
      { config: { start: "x", healthcheck: "health" } },
      "app.json",
      /"healthcheck" must be a URL path/,
    ],
    [
      "env values that are not strings",
      { config: { start: "x", env: { PORTS: 3 } } },
      "app.json",
      /env "PORTS" must be a string/,
    ],
    [
      "a bad env name",
      { config: { start: "x", env: { "A-B": "1" } } },
      "app.json",
      /env name "A-B" is not a valid/,
    ],
    [
      "a config path outside the source",
      {},
      "../../../../../../../../../etc/hostname",
      /points outside the source/,
    ],
    ["an absolute config path", {}, "/etc/hostname", /must be relative/],
  ] as const) {
    it(`${title} is a BuildError with a clear log line`, async () => {
      const dataDir = tempDir();
      const rt = newRuntime(dataDir);
      const s = spec(
        { kind: "directory", path: writeApp(tempDir(), files) },
        { frameworkConfigPath: path, installCommand: "echo should-not-run" },
      );
      const ctx = phase();
      await rt.prepare(s, ctx);
      await assert.rejects(rt.build(s, ctx), BuildError);
      assert.match(ctx.text("build"), new RegExp(`^error: .*${expected.source}`, "m"));
      assert.ok(!ctx.lines.build.includes("should-not-run"), "the config is checked before installing");
      assert.equal(existsSync(join(dataDir, "apps", s.deploymentId, s.revisionId)), false);
    });
  }

  it("a config symlinked to a file outside the source is refused", async () => {
    const { symlinkSync } = await import("node:fs");
    const outside = join(tempDir(), "secret.json");
    writeFileSync(outside, JSON.stringify({ start: "node server.js" }));
    const src = writeApp(tempDir(), { config: undefined });
    symlinkSync(outside, join(src, "app.json"));
    const rt = newRuntime(tempDir());
    const s = spec({ kind: "directory", path: src });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await assert.rejects(rt.build(s, ctx), /points outside the source/);
  });

  it("builds run with a clean environment, not the server's", async () => {
    const dataDir = tempDir();
    process.env.SLIPWAY_TEST_LEAK = "server-secret";
    try {
      const rt = newRuntime(dataDir);
      const s = spec({ kind: "directory", path: writeApp(tempDir()) }, { installCommand: "env | sort" });
      const ctx = phase();
      await rt.prepare(s, ctx);
      await rt.build(s, ctx);
      const names = ctx.lines.build
        .filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l))
        .map((l) => l.split("=")[0]);
      assert.ok(names.includes("PATH"));
      assert.ok(!names.includes("SLIPWAY_TEST_LEAK"));
      assert.ok(!ctx.text("build").includes("server-secret"));
      // The deployment's own HOME, shown as the app sees it: no host path reaches the log.
      assert.ok(ctx.lines.build.includes("HOME=/home/app"), ctx.text("build"));
      assert.ok(ctx.lines.build.includes("npm_config_cache=/home/app/.npm"), ctx.text("build"));
      assert.ok(!ctx.text("build").includes(dataDir));
    } finally {
      delete process.env.SLIPWAY_TEST_LEAK;
    }
  });

  it("an abort mid-build kills the whole process group and leaves no directory", async () => {
    const dataDir = tempDir();
    const pidFile = join(tempDir(), "sleeper.pid");
    const rt = newRuntime(dataDir);
    const s = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      { installCommand: `sleep 60 & echo $! > ${pidFile}; echo building; wait` },
    );
    const ctx = phase();
    await rt.prepare(s, ctx);
    const building = rt.build(s, ctx);
    await waitFor("the build to start", () => ctx.lines.build.includes("building"));
    const sleeper = Number(readFileSync(pidFile, "utf8"));
    assert.equal(alive(sleeper), true);
    ctx.abort.abort(new Error("interrupted by request"));
    await assert.rejects(building, /interrupted by request/);
    assert.equal(alive(sleeper), false);
    assert.equal(existsSync(join(dataDir, "apps", s.deploymentId, s.revisionId)), false);
  });
});
