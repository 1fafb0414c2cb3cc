import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { planBuild, withGivenCommands } from "../../../../src/runtimes/build/plan/plan.ts";
import { BuildError } from "../../../../src/runtimes/interface.ts";

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A source with these files (JSON values are written as JSON). */
function source(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "slipway-plan-"));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), typeof content === "string" ? content : JSON.stringify(content));
  }
  return dir;
}

async function plan(appDir: string, configPath?: string, install?: string) {
  const lines: string[] = [];
  const planned = await planBuild({
    appDir,
    ...(configPath === undefined ? {} : { configPath }),
    ...(install === undefined ? {} : { installCommand: install }),
    indexes: { pipExtra: [] },
    log: (line) => lines.push(line),
  });
  return { planned, lines };
}

describe("build plan", () => {
  it("the framework config's dependencies make a Python source and install after the manifest, each a quoted word", async () => {
    const dir = source({
      "framework.json": {
        dependencies: [".", "requests>=2; python_version >= '3'"],
        graphs: { a: "./a.py:g" },
      },
      "requirements.txt": "ms\n",
      "pyproject.toml": "[project]\nname = 'x'\nversion = '0'\n",
      Procfile: "web: python -m x\n",
    });
    const { planned } = await plan(dir, "framework.json");
    assert.deepEqual(
      planned.steps.map((s) => s.label),
      ["toolchain", "install", "dependencies"],
    );
    assert.equal(planned.steps[2]?.command, `pip install '.' 'requests>=2; python_version >= '\\''3'\\'''`);
    // `.` is the app itself, copied into .venv: a reused one would run old code.
    assert.equal(planned.cache, undefined);
  });

  it("dependencies alone (no requirements file) still make a Python build", async () => {
    const dir = source({ "framework.json": { dependencies: ["ms==1"] }, "main.py": "print(1)\n" });
    const { planned, lines } = await plan(dir, "framework.json");
    assert.deepEqual(
      planned.steps.map((s) => s.label),
      ["toolchain", "dependencies"],
    );
    assert.equal(planned.steps[1]?.command, "pip install 'ms==1'");
    assert.match(lines.join("\n"), /detected python \(framework config dependencies\)/);
  });

  it("a deployment's install command takes the detected install's place, before the dependencies", () => {
    const steps = [
      { label: "toolchain", command: "venv" },
      { label: "install", command: "pip install -r requirements.txt" },
      { label: "dependencies", command: "pip install ." },
    ];
    assert.deepEqual(
      withGivenCommands(steps, "make deps", "make build").map((s) => s.command),
      ["venv", "make deps", "pip install .", "make build"],
    );
    const noInstall = [
      { label: "toolchain", command: "venv" },
      { label: "dependencies", command: "pip install ." },
    ];
    assert.deepEqual(
      withGivenCommands(noInstall, "make deps", undefined).map((s) => s.command),
      ["venv", "make deps", "pip install ."],
    );
    assert.deepEqual(
      withGivenCommands([{ label: "build", command: "npm run build" }], "npm ci", undefined).map(
        (s) => s.command,
      ),
      ["npm ci", "npm run build"],
    );
  });

  it("a source with nothing to start fails naming where it looked", async () => {
    const dir = source({ "notes.txt": "hello" });
    await assert.rejects(plan(dir), (err: unknown) => {
      assert.ok(err instanceof BuildError);
      assert.match(err.message, /no start command/);
      assert.match(err.message, /Procfile/);
      return true;
    });
  });
});
