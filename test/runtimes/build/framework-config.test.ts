import assert from "node:assert/strict";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { readAppConfig } from "../../../src/runtimes/build/app-config.ts";
import { buildNodeVersion, versionMatches } from "../../../src/runtimes/build/framework-config.ts";
import { planBuild } from "../../../src/runtimes/build/plan/plan.ts";
import { BuildError } from "../../../src/runtimes/interface.ts";
import { bwrapSkip } from "../../helpers/bwrap.ts";
import { cleanupTemp, hit, newRuntime, phase, spec, tempDir, writeApp } from "../../helpers/local-runtime.ts";

const RANGE = { first: 328_400, last: 328_499 };
const skip = await bwrapSkip(RANGE);

/** A source holding `framework.json` with `config`, plus `files`. */
function source(config: unknown, files: Record<string, string> = {}): string {
  const dir = tempDir();
  writeFileSync(join(dir, "framework.json"), JSON.stringify(config));
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  return dir;
}

async function read(dir: string) {
  const lines: string[] = [];
  const config = await readAppConfig(dir, "framework.json", (l) => lines.push(l));
  return { config, lines };
}

/** Reading fails with a BuildError whose message (and last log line) matches `expected`. */
async function refused(dir: string, expected: RegExp): Promise<void> {
  const lines: string[] = [];
  await assert.rejects(
    readAppConfig(dir, "framework.json", (l) => lines.push(l)),
    (err: unknown) => {
      assert.ok(err instanceof BuildError, String(err));
      assert.match(err.message, expected);
      return true;
    },
  );
  assert.match(lines.at(-1) ?? "", new RegExp(`^error: .*${expected.source}`));
}

describe("framework config keys", () => {
  after(cleanupTemp);

  it("reads env from a dotenv file in the source", async () => {
    const dir = source(
      { env: "config/.env" },
      { "config/.env": `# settings\nexport A=1\nB='two words'\nC="x\\ny" # comment\nnot an assignment\n` },
    );
    const { config, lines } = await read(dir);
    assert.deepEqual(config.env, { A: "1", B: "two words", C: "x\ny" });
    assert.ok(
      lines.includes(`slipway: env file "config/.env": skipped line(s) 5, not NAME=value`),
      lines.join("\n"),
    );
  });

  it("keeps reading env as an object of strings", async () => {
    const { config } = await read(source({ env: { GREETING: "hello" }, start: "node server.js" }));
    assert.deepEqual(config.env, { GREETING: "hello" });
    assert.equal(config.start, "node server.js");
  });

  it("refuses a dotenv path outside the source, absolute, missing, or symlinked out", async () => {
    await refused(source({ env: "../.env" }), /env file "\.\.\/\.env" points outside the source/);
    await refused(
      source({ env: "/etc/hostname" }),
      /env file "\/etc\/hostname" must be relative to the source/,
    );
    await refused(source({ env: ".env" }), /env file "\.env" was not found in the source/);
    const outside = join(tempDir(), "secrets.env");
    writeFileSync(outside, "TOKEN=stolen\n");
    const linked = source({ env: ".env" });
    symlinkSync(outside, join(linked, ".env"));
    await refused(linked, /env file "\.env" points outside the source/);
    await refused(source({ env: "sub" }, { "sub/x": "" }), /env file "sub" is not a file/);
    await refused(source({ env: "" }), /"env" must name a dotenv file/);
  });

  it("refuses env of another type, and dotenv names that are not variable names", async () => {
    await refused(
      source({ env: ["A=1"] }),
      /"env" must be an object of strings or the path of a dotenv file/,
    );
    await refused(source({ env: 3 }), /"env" must be an object of strings or the path/);
    await refused(
      source({ env: ".env" }, { ".env": "A=1\nmy-key=2\n" }),
      /\.env" line 2: "my-key" is not a valid/,
    );
  });

  it("exposes dependencies, checking local paths stay in the source", async () => {
    const deps = [".", "./pkg", "./pkg[extra]", "requests>=2", "lib @ https://example.com/lib.whl"];
    const { config } = await read(source({ dependencies: deps }, { "pkg/setup.py": "" }));
    assert.deepEqual(config.dependencies, deps);
    await refused(source({ dependencies: "." }), /"dependencies" must be an array of non-empty strings/);
    await refused(source({ dependencies: [".", 2] }), /"dependencies" must be an array of non-empty strings/);
    await refused(source({ dependencies: [""] }), /"dependencies" must be an array/);
    await refused(
      source({ dependencies: ["../other"] }),
      /dependency "\.\.\/other" points outside the source/,
    );
    await refused(
      source({ dependencies: ["/usr/lib/pkg"] }),
      /dependency "\/usr\/lib\/pkg" must be relative/,
    );
    await refused(
      source({ dependencies: ["./missing"] }),
      /dependency "\.\/missing" was not found in the source/,
    );
    await refused(
      source({ dependencies: ["file:///etc"] }),
      /dependency "file:\/\/\/etc": use a path relative/,
    );
    const linked = source({ dependencies: ["./lib"] });
    symlinkSync(tempDir(), join(linked, "lib"));
    await refused(linked, /dependency "\.\/lib" points outside the source/);
  });

  it("exposes python_version, refusing numbers and non-versions", async () => {
    assert.equal((await read(source({ python_version: "3.11" }))).config.pythonVersion, "3.11");
    await refused(source({ python_version: 3.1 }), /"python_version" must be a version string like "3\.11"/);
    await refused(source({ python_version: "latest" }), /"python_version" must be a version string/);
  });

  it("checks node_version against the node builds run, naming both on a mismatch", async () => {
    const actual = await buildNodeVersion();
    assert.equal(actual, process.versions.node, "this machine's build node is the one running the tests");
    const major = actual?.split(".")[0] ?? "";
    assert.equal((await read(source({ node_version: major }))).config.nodeVersion, major);
    assert.equal((await read(source({ node_version: `v${actual}` }))).config.nodeVersion, actual);
    const other = String(Number(major) - 2);
    await refused(
      source({ node_version: other }),
      new RegExp(
        `node_version "${other}" is asked for, but this machine's node is ${actual?.replace(/\./g, "\\.")}`,
      ),
    );
    await refused(source({ node_version: 20 }), /"node_version" must be a version string like "20"/);
  });

  it("matches versions by the parts given", () => {
    assert.equal(versionMatches("20", "20.11.1"), true);
    assert.equal(versionMatches("20.11", "20.11.1"), true);
    assert.equal(versionMatches("20.1", "20.11.1"), false);
    assert.equal(versionMatches("2", "20.11.1"), false);
    assert.equal(versionMatches("20.11.1", "20.11.1"), true);
  });

  it("exposes dockerfile_lines, one line each", async () => {
    const lines = ["RUN apt-get update", "ENV A=1"];
    assert.deepEqual((await read(source({ dockerfile_lines: lines }))).config.dockerfileLines, lines);
    await refused(
      source({ dockerfile_lines: "RUN x" }),
      /"dockerfile_lines" must be an array of non-empty strings/,
    );
    await refused(source({ dockerfile_lines: ["RUN a\nRUN b"] }), /must be one line/);
  });

  it("the plan carries the dotenv's env and dockerfile_lines (appended when an image is built)", async () => {
    const dir = source(
      { env: ".env", start: "node server.js", dockerfile_lines: ["RUN true"] },
      { ".env": "A=1\n" },
    );
    const plan = await planBuild({
      appDir: dir,
      configPath: "framework.json",
      indexes: { pipExtra: [] },
      log: () => {},
    });
    assert.deepEqual(plan.env, { A: "1" });
    assert.deepEqual(plan.kind === "process" && plan.dockerfileLines, ["RUN true"]);
  });

  it("python_version reaches the Python build's choice of interpreter", async () => {
    const dir = source({ python_version: "3.99", start: "python app.py" }, { "requirements.txt": "" });
    await assert.rejects(
      planBuild({ appDir: dir, configPath: "framework.json", indexes: { pipExtra: [] }, log: () => {} }),
      /python 3\.99 \(from [^)]*\) is not on this machine; Python versions here: /,
    );
  });

  it("names the keys it does not act on in one log line, and ignores them", async () => {
    const { config, lines } = await read(
      source({ graphs: { agent: "./agent.py:graph" }, store: {}, auth: { path: "x" }, env: {}, start: "x" }),
    );
    assert.deepEqual(
      lines.filter((l) => l.includes("not acted on")),
      ["slipway: framework config keys not acted on here: graphs, store, auth"],
    );
    assert.equal(config.start, "x");
    const quiet = await read(
      source({ start: "x", healthcheck: "/ok", redis: true, healthcheck_timeout_s: 5 }),
    );
    assert.deepEqual(quiet.lines, []);
    assert.deepEqual(quiet.config, {
      start: "x",
      healthcheck: "/ok",
      healthTimeoutS: 5,
      env: {},
      redis: true,
    });
  });

  it("builds the hosted service's framework config in the sandbox: env from .env, graphs named and ignored", {
    skip,
  }, async () => {
    const src = writeApp(tempDir(), {
      config: undefined,
      extra: {
        "langgraph.json": JSON.stringify({
          env: ".env",
          dependencies: ["."],
          graphs: { agent: "./agent.py:graph" },
        }),
        ".env": `# from the hosted service's CLI\nexport GREETING="hello\\nfrom dotenv" # a comment\nSECRET='s3cr#t'\n`,
        "agent.py": "graph = None\n",
        "package.json": JSON.stringify({ name: "agent", scripts: { start: "node server.js" } }),
      },
    });
    const rt = newRuntime(tempDir(), { sandbox: "bwrap", uidRange: RANGE });
    after(() => rt.close());
    const s = spec({ kind: "directory", path: src }, { frameworkConfigPath: "langgraph.json" });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    const log = ctx.text("build");
    assert.ok(ctx.lines.build.includes("slipway: framework config keys not acted on here: graphs"), log);
    assert.match(log, /^slipway: detected node \(package\.json\): .*start: npm start \(node\)$/m);
    await rt.activate(s, ctx);
    const res = await hit(rt, s.deploymentName);
    assert.equal(res.status, 200, res.body);
    const body = res.json();
    assert.equal(body.greeting, "hello\nfrom dotenv");
    assert.equal(body.secret, "s3cr#t");
    await rt.teardown(s.deploymentId);
  });

  it("a dotenv path outside the source fails the build before anything runs; the serving revision keeps serving", {
    skip,
  }, async () => {
    const rt = newRuntime(tempDir(), { sandbox: "bwrap", uidRange: RANGE });
    after(() => rt.close());
    const serving = spec({ kind: "directory", path: writeApp(tempDir()) });
    const ctx = phase();
    await rt.prepare(serving, ctx);
    await rt.build(serving, ctx);
    await rt.activate(serving, ctx);
    assert.equal((await hit(rt, serving.deploymentName)).status, 200);

    const src = writeApp(tempDir(), {
      config: undefined,
      extra: { "langgraph.json": JSON.stringify({ env: "../.env" }) },
    });
    const broken = spec(
      { kind: "directory", path: src },
      {
        deploymentId: serving.deploymentId,
        deploymentName: serving.deploymentName,
        revisionId: `${serving.revisionId}-broken`,
        frameworkConfigPath: "langgraph.json",
        installCommand: "echo should-not-run",
      },
    );
    const failed = phase();
    await rt.prepare(broken, failed);
    await assert.rejects(rt.build(broken, failed), (err: unknown) => {
      assert.ok(err instanceof BuildError);
      assert.equal(err.message, `app config "langgraph.json": env file "../.env" points outside the source`);
      return true;
    });
    assert.ok(!failed.lines.build.includes("should-not-run"));
    assert.equal(await rt.isBuilt(broken), false);
    const still = await hit(rt, serving.deploymentName);
    assert.equal(still.status, 200, "the serving revision keeps serving");
    assert.equal(still.json().version, "v1");
    await rt.teardown(serving.deploymentId);
  });
});
