import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { openPgliteClient, PGLITE_SETTINGS } from "../../src/db/pglite.ts";

/** The embedded database: its first start initialises the directory, later starts resume it. */
describe("embedded PGlite", () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "slipway-pglite-"));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("initialises an empty directory, keeps its data across restarts and runs with the light settings", async () => {
    const dir = join(root, "db");
    const first = await openPgliteClient(dir);
    try {
      assert.ok(existsSync(join(dir, "PG_VERSION")), "the directory was initialised");
      await first.exec("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('across restarts')");
    } finally {
      await first.close();
    }
    const again = await openPgliteClient(dir);
    try {
      const kept = await again.query<{ v: string }>("SELECT v FROM kept");
      assert.deepEqual(kept.rows, [{ v: "across restarts" }]);
      for (const [name, value] of Object.entries(PGLITE_SETTINGS)) {
        const shown = await again.query<Record<string, string>>(`SHOW ${name}`);
        assert.equal(shown.rows[0]?.[name], value, name);
      }
      await again.exec("CREATE EXTENSION IF NOT EXISTS pg_trgm");
      const trgm = await again.query("SELECT similarity('slipway', 'slip') > 0 AS ok");
      assert.deepEqual(trgm.rows, [{ ok: true }], "the pg_trgm extension is available");
    } finally {
      await again.close();
    }
  });

  it("runs in memory with the same settings", async () => {
    const db = await openPgliteClient(undefined);
    try {
      const shown = await db.query<{ shared_buffers: string }>("SHOW shared_buffers");
      assert.equal(shown.rows[0]?.shared_buffers, PGLITE_SETTINGS.shared_buffers);
    } finally {
      await db.close();
    }
  });
});
