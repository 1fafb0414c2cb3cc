import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { REPO_ROOT } from "./helpers/process.ts";

/**
 * test/ mirrors src/ folder for folder, so a suite is found where its code is. Only test/helpers
 * (shared test-only code), test/e2e (whole-system journeys) and test/package (the npm package as
 * installed: package.json, the build, bin/) have no src/ twin.
 */
const UNMIRRORED = new Set(["helpers", "e2e", "package"]);
/**
 * Whole-tree checks with no src/ module of their own: this file, layers.test.ts (imports) and
 * docs.test.ts (the README and docs/ against the code).
 */
const ROOT_EXCEPTIONS = new Set(["layout.test.ts", "layers.test.ts", "docs.test.ts"]);

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * What breaks the mirror under `testRoot`: a folder with no src/ folder of the same path, a root
 * suite with no src/ file of its name, and a helper (a .ts that is not a suite) outside test/helpers.
 */
function mirrorProblems(testRoot: string, srcRoot: string): string[] {
  const problems: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(testRoot, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!rel && UNMIRRORED.has(entry.name)) continue;
        if (!isDir(join(srcRoot, path))) problems.push(`test/${path}/ has no src/${path}/`);
        walk(path);
      } else if (entry.name.endsWith(".test.ts")) {
        if (rel || ROOT_EXCEPTIONS.has(entry.name)) continue;
        const module = entry.name.replace(/\.test\.ts$/, ".ts");
        if (!isFile(join(srcRoot, module))) problems.push(`test/${path} has no src/${module}`);
      } else if (entry.name.endsWith(".ts")) {
        problems.push(`test/${path} is not a suite: shared test code belongs in test/helpers/`);
      }
    }
  };
  walk("");
  return problems;
}

describe("test/ mirrors src/", () => {
  it("every test folder has a src/ folder of the same path", () => {
    assert.deepEqual(mirrorProblems(join(REPO_ROOT, "test"), join(REPO_ROOT, "src")), []);
  });

  describe("the check itself", () => {
    const root = mkdtempSync(join(tmpdir(), "slipway-layout-"));
    after(() => rmSync(root, { recursive: true, force: true }));

    it("names a stray folder, a root suite without a module and a helper outside test/helpers", () => {
      const src = join(root, "src");
      const test = join(root, "test");
      for (const dir of [
        "src/resources/tags",
        "test/resources/tags",
        "test/runtime",
        "test/helpers",
        "test/e2e",
      ]) {
        mkdirSync(join(root, dir), { recursive: true });
      }
      writeFileSync(join(src, "config.ts"), "");
      for (const file of [
        "config.test.ts",
        "nothing.test.ts",
        "resources/tags/tags.test.ts",
        "resources/tags/fixtures.ts",
        "helpers/shared.ts",
        "e2e/journey.test.ts",
      ]) {
        writeFileSync(join(test, file), "");
      }
      assert.deepEqual(mirrorProblems(test, src).sort(), [
        "test/nothing.test.ts has no src/nothing.ts",
        "test/resources/tags/fixtures.ts is not a suite: shared test code belongs in test/helpers/",
        "test/runtime/ has no src/runtime/",
      ]);
    });
  });
});
