import assert from "node:assert/strict";
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  pickInterpreter,
  requestedVersion,
  systemInterpreters,
} from "../../../../../src/runtimes/build/plan/python/interpreter.ts";
import { BuildError } from "../../../../../src/runtimes/interface.ts";
import { cleanupTemp, tempDir } from "../../../../helpers/local-runtime.ts";

/** A bin directory holding `names` (empty files) and python3 → `default`. */
function bin(names: string[], defaultName?: string): string {
  const dir = tempDir();
  for (const name of names) writeFileSync(join(dir, name), "");
  if (defaultName !== undefined) symlinkSync(defaultName, join(dir, "python3"));
  return dir;
}

describe("python interpreters", () => {
  after(cleanupTemp);

  it("finds python3.X in the bin dir, the default being what python3 names", async () => {
    const found = await systemInterpreters(
      bin(["python3.9", "python3.12", "python3.11", "python3.11-config"], "python3.11"),
    );
    assert.deepEqual(
      found.all.map((i) => i.version),
      ["3.9", "3.11", "3.12"],
    );
    assert.equal(found.preferred?.version, "3.11");
    assert.equal((await systemInterpreters(bin(["python3.9", "python3.10"]))).preferred?.version, "3.10");
    assert.deepEqual(await systemInterpreters(join(tempDir(), "missing")), { all: [] });
  });

  it("matches on major.minor, 3 or nothing taking the default, and fails naming what exists", async () => {
    const found = await systemInterpreters(bin(["python3.9", "python3.11"], "python3.11"));
    const pick = (version?: string) =>
      pickInterpreter(
        version === undefined ? undefined : { version, from: "python_version" },
        found,
        () => {},
      );
    assert.equal(pick().version, "3.11");
    assert.equal(pick("3").version, "3.11");
    assert.equal(pick("3.9").version, "3.9");
    assert.equal(pick("3.9.18").path, join(found.all[0]?.path ?? "", "..", "python3.9"));
    const lines: string[] = [];
    assert.throws(
      () => pickInterpreter({ version: "3.13", from: ".python-version" }, found, (l) => lines.push(l)),
      (err: unknown) =>
        err instanceof BuildError &&
        err.message ===
          "python 3.13 (from .python-version) is not on this machine; Python versions here: 3.9, 3.11",
    );
    assert.deepEqual(lines, [
      "error: python 3.13 (from .python-version) is not on this machine; Python versions here: 3.9, 3.11",
    ]);
    assert.throws(() => pick("2"), /python 2 \(from python_version\) is not on this machine/);
    assert.throws(() => pick("latest"), /"latest" \(from python_version\) is not a version/);
    assert.throws(
      () => pickInterpreter(undefined, { all: [] }, () => {}),
      /no Python interpreter on this machine/,
    );
  });

  it("reads the version asked for: python_version, then .python-version, then runtime.txt", async () => {
    const dir = tempDir();
    assert.equal(await requestedVersion(dir, undefined), undefined);
    writeFileSync(join(dir, "runtime.txt"), "python-3.11.4\n");
    assert.deepEqual(await requestedVersion(dir, undefined), { version: "3.11.4", from: "runtime.txt" });
    writeFileSync(join(dir, ".python-version"), "# pyenv\n\n3.10\n");
    assert.deepEqual(await requestedVersion(dir, undefined), { version: "3.10", from: ".python-version" });
    assert.deepEqual(await requestedVersion(dir, " 3.12 "), { version: "3.12", from: "python_version" });
  });
});
