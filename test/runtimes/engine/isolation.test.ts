import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ensureSubordinateIds, SUBORDINATE_LINE } from "../../../src/runtimes/engine/isolation.ts";

describe("engine isolation: podman's subordinate ranges", () => {
  it("subordinate ranges for podman's containers user are added once, existing lines kept", async () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-subid-"));
    try {
      const subuid = join(dir, "subuid");
      const subgid = join(dir, "subgid");
      writeFileSync(subuid, "alice:100000:65536");
      assert.equal(await ensureSubordinateIds([subuid, subgid]), true);
      assert.equal(await ensureSubordinateIds([subuid, subgid]), true);
      assert.equal(readFileSync(subuid, "utf8"), `alice:100000:65536\n${SUBORDINATE_LINE}\n`);
      assert.equal(readFileSync(subgid, "utf8"), `${SUBORDINATE_LINE}\n`);
      writeFileSync(subgid, "containers:300000:65536\n");
      assert.equal(await ensureSubordinateIds([subgid]), true);
      assert.equal(
        readFileSync(subgid, "utf8"),
        "containers:300000:65536\n",
        "an operator's own range stays",
      );
      assert.equal(await ensureSubordinateIds([join(dir, "missing-dir", "subuid")]), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
