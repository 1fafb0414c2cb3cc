import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { REPO_ROOT } from "../helpers/process.ts";

/**
 * bin/slipway.mjs (what `npm start` runs) picks the compiled dist/ when it is up to date with src/,
 * and the TypeScript source otherwise. Run here on a copy whose dist/ and src/ entry points only
 * say which one ran.
 */
describe("the slipway command: compiled or source", () => {
  let root: string;
  const past = new Date(Date.now() - 60_000);
  const now = new Date();

  const run = () => {
    const r = spawnSync(process.execPath, [join(root, "bin", "slipway.mjs"), "serve"], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return { out: r.stdout.trim(), err: r.stderr };
  };
  const write = (path: string, text: string, at: Date) => {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
    utimesSync(join(root, path), at, at);
  };

  before(() => {
    root = mkdtempSync(join(tmpdir(), "slipway-bin-"));
    mkdirSync(join(root, "bin"));
    copyFileSync(join(REPO_ROOT, "bin", "slipway.mjs"), join(root, "bin", "slipway.mjs"));
    symlinkSync(join(REPO_ROOT, "node_modules"), join(root, "node_modules"));
    write("package.json", JSON.stringify({ type: "module" }), past);
    write(
      "src/cli/main.ts",
      'const args: string[] = process.argv.slice(2);\nconsole.log("source", ...args);\n',
      past,
    );
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("runs the source through tsx, saying so, when there is no build", () => {
    const { out, err } = run();
    assert.equal(out, "source serve");
    assert.match(err, /no build in dist\//);
  });

  it("runs dist/ when it is newer than every source file, whatever else changed", () => {
    write("dist/cli/main.js", 'console.log("compiled", ...process.argv.slice(2));\n', now);
    write("src/README.md", "changed after the build", new Date(Date.now() + 1000));
    const { out, err } = run();
    assert.equal(out, "compiled serve");
    assert.equal(err, "");
  });

  it("runs the source when a .ts or .sql file changed after the build", () => {
    write("dist/cli/main.js", 'console.log("compiled");\n', now);
    write("src/db/migrations/9999_new.sql", "SELECT 1;", new Date(Date.now() + 1000));
    const { out, err } = run();
    assert.equal(out, "source serve");
    assert.match(err, /src\/ changed after the build/);
  });
});
