import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "drizzle-orm";
import { verifyBackup } from "../../src/backup/format.ts";
import { rows } from "../../src/db/client.ts";
import { createTestDatabase, DB_KINDS } from "../helpers/databases.ts";
import { runSlipway, type SlipwayProcess } from "../helpers/process.ts";

const SERVING = /Slipway is serving (http:\/\/\S+) on/;
const BACKUP = /^slipway-.*\.backup\.gz$/;

/**
 * Scheduled backups (SLIPWAY_BACKUP_DIR, _EVERY, _KEEP) with real servers: whole, checked files
 * under their names, the newest KEEP kept and other files left alone; on one PostgreSQL database
 * two servers take one backup a period between them (the leader's), not one each.
 */
describe("scheduled backups", () => {
  const dirs: string[] = [];
  const servers: SlipwayProcess[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), "slipway-scheduled-"));
    dirs.push(d);
    return d;
  };
  after(async () => {
    for (const s of servers) {
      s.proc.kill("SIGKILL");
      await s.exited;
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const start = async (env: Record<string, string>) => {
    const s = runSlipway(["serve"], {
      PORT: "0",
      SLIPWAY_APPS_PORT: "0",
      SLIPWAY_SANDBOX: "none",
      SLIPWAY_RECONCILER_POLL_MS: "200",
      SLIPWAY_BACKUP_EVERY: "2s",
      SLIPWAY_BACKUP_KEEP: "2",
      ...env,
    });
    servers.push(s);
    await s.waitFor(SERVING, 120_000);
    return s;
  };

  it("the embedded database: a backup every period, the newest KEEP kept, other files untouched", async () => {
    const dataDir = tempDir();
    const backups = tempDir();
    writeFileSync(join(backups, "notes.txt"), "mine");
    const s = await start({ SLIPWAY_DATA_DIR: dataDir, SLIPWAY_BACKUP_DIR: backups });
    await sleep(7_000);
    const files = readdirSync(backups).filter((f) => BACKUP.test(f));
    assert.equal(files.length, 2, `kept: ${readdirSync(backups).join(", ")}\n${s.output()}`);
    assert.ok(readdirSync(backups).includes("notes.txt"), "a file of another name is left alone");
    assert.equal(readdirSync(backups).filter((f) => f.endsWith(".partial")).length <= 1, true);
    for (const f of files) {
      const { header, end } = await verifyBackup(join(backups, f));
      assert.equal(header.database, "pglite");
      assert.ok(end.rows > 0);
    }
    assert.equal(await s.stop(), 0);
  });

  for (const kind of DB_KINDS.filter((k) => k === "postgres")) {
    it(`two servers on one ${kind} database take one backup a period between them`, async () => {
      const db = await createTestDatabase("postgres");
      try {
        const url = db.url as string;
        const a = tempDir();
        const b = tempDir();
        const first = await start({ DATABASE_URL: url, SLIPWAY_DATA_DIR: tempDir(), SLIPWAY_BACKUP_DIR: a });
        const second = await start({
          DATABASE_URL: url,
          SLIPWAY_DATA_DIR: tempDir(),
          SLIPWAY_BACKUP_DIR: b,
          SLIPWAY_BACKUP_KEEP: "100",
        });
        await sleep(9_000);
        assert.equal(await first.stop(), 0);
        assert.equal(await second.stop(), 0);
        const taken = await rows<{
          started_at: Date;
          file: string;
          rows: string | null;
          error: string | null;
        }>(
          db.db.orm,
          sql`SELECT started_at, file, rows::text AS rows, error FROM scheduled_backups ORDER BY started_at`,
        );
        assert.ok(taken.length >= 3, `backups taken: ${taken.length}`);
        for (const [i, t] of taken.entries()) {
          assert.equal(t.error, null);
          const prev = taken[i - 1];
          if (prev) {
            const gap = new Date(t.started_at).getTime() - new Date(prev.started_at).getTime();
            assert.ok(gap >= 1900, `one backup a period: ${gap} ms between two`);
          }
        }
        const inA = readdirSync(a).filter((f) => BACKUP.test(f));
        const inB = readdirSync(b).filter((f) => BACKUP.test(f));
        assert.ok(inA.length <= 2, "the first server keeps 2");
        // Every backup taken is in one of the two directories (the second keeps them all).
        const recorded = new Set(taken.map((t) => t.file));
        for (const f of inB) assert.ok(recorded.has(f), `${f} was recorded`);
        assert.equal(inB.length + taken.filter((t) => !inB.includes(t.file)).length, taken.length);
        for (const f of [...inA.map((x) => join(a, x)), ...inB.map((x) => join(b, x))]) {
          assert.equal((await verifyBackup(f)).header.database, "postgres");
        }
      } finally {
        await db.drop();
      }
    });
  }
});
