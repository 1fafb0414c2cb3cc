import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { touchesWatchPaths, watchPathsOf } from "../../src/codehost/watch-paths.ts";

describe("watch_paths", () => {
  it("reads the key from an app config's text; absent or unreadable means no filter", () => {
    assert.deepEqual(watchPathsOf(undefined), { kind: "all" });
    assert.deepEqual(watchPathsOf("not json"), { kind: "all" });
    assert.deepEqual(watchPathsOf('{"start":"x"}'), { kind: "all" });
    assert.deepEqual(watchPathsOf('{"watch_paths":["./api/**"," docs "]}'), {
      kind: "globs",
      globs: ["api/**", "docs"],
    });
  });

  it("a malformed list is ignored, saying why", () => {
    for (const bad of ['"api/**"', "[]", '[""]', "[1]", JSON.stringify(Array(101).fill("a"))]) {
      const w = watchPathsOf(`{"watch_paths":${bad}}`);
      assert.equal(w.kind, "invalid", bad);
    }
  });

  it("matches `*` within a directory, `**` across, and a directory name covers what is under it", () => {
    assert.ok(touchesWatchPaths(["api/src/x.ts"], ["api/**"]));
    assert.ok(touchesWatchPaths(["api/src/x.ts"], ["api"]));
    assert.ok(touchesWatchPaths(["api/src/x.ts"], ["api/"]));
    assert.ok(touchesWatchPaths(["package.json"], ["*.json"]));
    assert.ok(!touchesWatchPaths(["web/package.json"], ["*.json"]));
    assert.ok(!touchesWatchPaths(["docs/a.md", "README.md"], ["api/**", "package.json"]));
    assert.ok(!touchesWatchPaths(["apiary/x"], ["api"]));
    assert.ok(!touchesWatchPaths([], ["**"]));
  });
});
