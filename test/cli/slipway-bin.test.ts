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

/**
 * An installed copy (npm install of a tarball or git URL, npm install -g) holds bin/ and dist/ but no
 * src/: it runs dist/ whatever its age, and a copy with neither says so instead of a module trace.
 */
describe("the slipway command in an installed copy", () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "slipway-bin-installed-"));
    mkdirSync(join(root, "bin"));
    copyFileSync(join(REPO_ROOT, "bin", "slipway.mjs"), join(root, "bin", "slipway.mjs"));
    symlinkSync(join(REPO_ROOT, "node_modules"), join(root, "node_modules"));
    writeFileSync(join(root, "package.json"), JSON.stringify({ type: "module" }));
  });
  after(() => rmSync(root, { recursive: true, force: true }));
  const run = () =>
    spawnSync(process.execPath, [join(root, "bin", "slipway.mjs"), "--help"], { encoding: "utf8" });

  it("names the copy and exits 1 when it has neither dist/ nor src/", () => {
    const r = run();
    assert.equal(r.status, 1);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /has neither a build \(dist\/\) nor the source \(src\/\)/);
    assert.ok(r.stderr.includes(root), r.stderr);
    assert.doesNotMatch(r.stderr, /ERR_MODULE_NOT_FOUND|at /);
  });

  it("runs dist/ without a word when there is no src/, however old the build", () => {
    mkdirSync(join(root, "dist", "cli"), { recursive: true });
    writeFileSync(
      join(root, "dist", "cli", "main.js"),
      'console.log("compiled", ...process.argv.slice(2));\n',
    );
    const longAgo = new Date("1985-10-26T08:15:00Z"); // npm pack's fixed file time
    utimesSync(join(root, "dist", "cli", "main.js"), longAgo, longAgo);
    const r = run();
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), "compiled --help");
    assert.equal(r.stderr, "");
  });
});
