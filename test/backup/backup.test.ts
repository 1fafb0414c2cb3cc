import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { gunzipSync, gzipSync } from "node:zlib";
import { sql } from "drizzle-orm";
import { verifyBackup } from "../../src/backup/format.ts";
import { RestoreRefused, restoreBackup } from "../../src/backup/restore.ts";
import { readRevisionSecrets } from "../../src/core/deployments/secrets.ts";
import { Keyring, keyId } from "../../src/crypto/envelope.ts";
import { openDatabase, rows } from "../../src/db/client.ts";
import { authMatrix } from "../helpers/auth-matrix.ts";
import { api, contents, downloadBackup, makeSource, type Source } from "../helpers/backup-source.ts";
import { createTestDatabase, DB_KINDS, type DbKind } from "../helpers/databases.ts";
import { forEachDatabase } from "../helpers/harness.ts";

const SECRET = "backup-secret-value-42";

async function seed(s: Source): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const d = await api(s, "POST", "/v2/deployments", {
      name: `app-${i}`,
      source: "external_docker",
      source_revision_config: { image_uri: `registry.example/app:${i}` },
      secrets: [{ name: "API_TOKEN", value: `${SECRET}-${i}` }],
    });
    assert.equal(d.status, 201, JSON.stringify(d.body));
  }
  const hook = await api(s, "POST", "/v2/webhooks", {
    url: "https://hooks.example.com/a",
    events: ["deployment.created"],
  });
  assert.equal(hook.status, 201, JSON.stringify(hook.body));
  const key = await api(s, "POST", "/v1/api-keys", { role: "member", description: "ci" });
  assert.equal(key.status, 201, JSON.stringify(key.body));
}

/** A fresh, empty target of a kind: an embedded data dir, or a new PostgreSQL database. */
async function emptyTarget(kind: DbKind) {
  if (kind === "pglite") {
    const dataDir = mkdtempSync(join(tmpdir(), "slipway-restore-"));
    return {
      database: { kind: "pglite" as const, dataDir },
      dataDir,
      open: () => openDatabase({ kind: "pglite", dataDir }),
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const test = await createTestDatabase("postgres");
  // Not even migrated: as a database made for Slipway and never used.
  await test.db.exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
  const url = test.url as string;
  const dataDir = mkdtempSync(join(tmpdir(), "slipway-restore-"));
  return {
    database: { kind: "postgres" as const, url },
    dataDir,
    open: () => openDatabase({ kind: "postgres", url }),
    drop: async () => {
      rmSync(dataDir, { recursive: true, force: true });
      await test.drop();
    },
  };
}

forEachDatabase("GET /v1/backup: who may take one", (suite) => {
  authMatrix(suite, { method: "GET", url: () => "/v1/backup", role: "admin" });
  it("an organization admin that is not a system admin → 403; a system admin → 200 and a backup", async () => {
    const ctx = suite.ctx;
    const refused = await ctx.app.inject({
      method: "GET",
      url: "/v1/backup",
      headers: ctx.headers(ctx.keys.admin),
    });
    assert.equal(refused.statusCode, 403, refused.body);
    const other = await ctx.app.inject({
      method: "GET",
      url: "/v1/backup",
      headers: ctx.headers(ctx.other.admin),
    });
    assert.equal(other.statusCode, 403, other.body);
    const ok = await ctx.app.inject({
      method: "GET",
      url: "/v1/backup",
      headers: ctx.headers(ctx.keys.system),
    });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.headers["content-type"], "application/gzip");
    assert.match(String(ok.headers["content-disposition"]), /attachment; filename="slipway-.*\.backup\.gz"/);
    const text = gunzipSync(ok.rawPayload).toString("utf8");
    const header = JSON.parse(text.slice(0, text.indexOf("\n"))) as Record<string, unknown>;
    assert.equal(header.slipway_backup, 1);
    assert.equal(header.database, ctx.kind);
    assert.equal(header.master_key_id, ctx.keyring.activeKid);
    assert.ok((header.migrations as string[]).length > 0);
    assert.equal(header.schema_version, (header.migrations as string[]).at(-1));
  });
});

for (const from of DB_KINDS) {
  describe(`backup of ${from}, restored`, () => {
    let source: Source;
    let file = "";
    after(async () => {
      await source?.close();
    });

    it("holds the database, with secrets sealed and no master key", async () => {
      source = await makeSource(from);
      await seed(source);
      const taken = await downloadBackup(source);
      assert.equal(taken.res.statusCode, 200, taken.res.body);
      file = taken.file;
      const { header, end } = await verifyBackup(file);
      assert.equal(header.master_key_id, keyId(Buffer.from(source.masterKey, "base64")));
      assert.deepEqual(end.key_ids, [header.master_key_id]);
      assert.ok(end.rows > 10, `rows: ${end.rows}`);
      const text = gunzipSync(readFileSync(file)).toString("utf8");
      assert.ok(!text.includes(SECRET), "no secret in plain text");
      assert.ok(!text.includes(source.masterKey), "never the master key");
      assert.ok(!text.includes(Buffer.from(source.masterKey, "base64").toString("hex")), "nor its hex");
      assert.match(text, /"sw1\.[0-9a-f]{12}\./, "sealed values are there, sealed");
    });

    for (const to of DB_KINDS) {
      it(`into an empty ${to} database: the same rows, and the server serves them`, async () => {
        const target = await emptyTarget(to);
        try {
          const report = await restoreBackup(file, {
            database: target.database,
            keys: { masterKey: source.masterKey, previousMasterKeys: [], dataDir: target.dataDir },
            force: false,
          });
          assert.equal(report.rows, (await verifyBackup(file)).end.rows);
          assert.deepEqual(report.migrated, []);
          const restored = await target.open();
          try {
            assert.deepEqual(await contents(restored), await contents(source.db));
            // The sealed secrets open with the same master key on the restored database.
            const keyring = Keyring.fromBase64(source.masterKey);
            const revisions = await rows<{ id: string }>(restored.orm, sql`SELECT id FROM revisions`);
            const values = new Set<string>();
            for (const r of revisions) {
              for (const secret of await readRevisionSecrets(restored.orm, keyring, r.id))
                values.add(secret.value);
            }
            assert.deepEqual(
              [...values].sort(),
              [0, 1, 2].map((i) => `${SECRET}-${i}`),
            );
          } finally {
            await restored.close();
          }
        } finally {
          await target.drop();
        }
      });
    }

    it("taken while writes go on: a consistent moment, every write acknowledged before it in it", async () => {
      const names: { name: string; id: string }[] = [];
      let stop = false;
      let n = 0;
      const writer = async () => {
        while (!stop) {
          const name = `busy-${n++}`;
          const d = await api<{ id: string }>(source, "POST", "/v2/deployments", {
            name,
            source: "external_docker",
            source_revision_config: { image_uri: "registry.example/busy:1" },
            secrets: [{ name: "TOKEN", value: `${SECRET}-${name}` }],
          });
          assert.equal(d.status, 201, JSON.stringify(d.body));
          names.push({ name, id: d.body.id });
        }
      };
      const writers = [writer(), writer(), writer()];
      while (names.length < 5) await new Promise((r) => setTimeout(r, 20));
      const before = names.length;
      const taken = await downloadBackup(source);
      const afterCount = names.length;
      stop = true;
      await Promise.all(writers);
      assert.equal(taken.res.statusCode, 200);
      const target = await emptyTarget(from);
      try {
        await restoreBackup(taken.file, {
          database: target.database,
          keys: { masterKey: source.masterKey, previousMasterKeys: [], dataDir: target.dataDir },
          force: false,
        });
        const restored = await target.open();
        try {
          const busy = await rows<{ id: string; revisions: number; secrets: number }>(
            restored.orm,
            sql`SELECT d.id::text AS id,
                       (SELECT count(*)::int FROM revisions r WHERE r.deployment_id = d.id) AS revisions,
                       (SELECT count(*)::int FROM revision_secrets s WHERE s.deployment_id = d.id) AS secrets
                  FROM deployments d WHERE d.name LIKE 'busy-%'`,
          );
          const ids = new Set(busy.map((b) => b.id));
          // Acknowledged before the backup began: in it; begun after it ended: not.
          for (const w of names.slice(0, before)) assert.ok(ids.has(w.id), `${w.name} is in the backup`);
          assert.ok(busy.length <= afterCount, `${busy.length} of at most ${afterCount}`);
          assert.ok(ids.size > 0);
          // Each deployment whole: with its revision and its secret, as one moment of the database.
          for (const b of busy) {
            assert.equal(b.revisions, 1, `deployment ${b.id} has its revision`);
            assert.equal(b.secrets, 1, `deployment ${b.id} has its secret`);
          }
          const orphans = await rows<{ n: number }>(
            restored.orm,
            sql`SELECT count(*)::int AS n FROM revisions r WHERE NOT EXISTS (SELECT 1 FROM deployments d WHERE d.id = r.deployment_id)`,
          );
          assert.equal(orphans[0]?.n, 0, "no revision without its deployment");
        } finally {
          await restored.close();
        }
      } finally {
        await target.drop();
      }
    });

    it("is refused with a master key that cannot open its secrets, naming the key it needs; nothing written", async () => {
      const target = await emptyTarget(from);
      try {
        const other = Buffer.alloc(32, 7).toString("base64");
        const needed = keyId(Buffer.from(source.masterKey, "base64"));
        await assert.rejects(
          restoreBackup(file, {
            database: target.database,
            keys: { masterKey: other, previousMasterKeys: [], dataDir: target.dataDir },
            force: false,
          }),
          (err: Error) =>
            err instanceof RestoreRefused &&
            err.message.includes(`master key ${needed}`) &&
            err.message.includes(keyId(Buffer.from(other, "base64"))),
        );
        // No key at all: the same refusal, and no key file is made.
        await assert.rejects(
          restoreBackup(file, {
            database: target.database,
            keys: { masterKey: undefined, previousMasterKeys: [], dataDir: target.dataDir },
            force: false,
          }),
          (err: Error) =>
            err instanceof RestoreRefused &&
            err.message.includes(needed) &&
            err.message.includes("master.key"),
        );
        const db = await target.open();
        try {
          const counts = await contents(db);
          assert.equal(counts.size, 0, "no table was made");
        } finally {
          await db.close();
        }
      } finally {
        await target.drop();
      }
    });

    it("a truncated or changed file is refused by its checksum, and nothing is written", async () => {
      const target = await emptyTarget(from);
      const keys = { masterKey: source.masterKey, previousMasterKeys: [], dataDir: target.dataDir };
      const dir = mkdtempSync(join(tmpdir(), "slipway-bad-backup-"));
      try {
        const whole = readFileSync(file);
        const cut = join(dir, "cut.gz");
        writeFileSync(cut, whole.subarray(0, Math.floor(whole.length / 2)));
        await assert.rejects(
          restoreBackup(cut, { database: target.database, keys, force: false }),
          /cut short|damaged/,
        );
        // Cut at a line: a valid gzip stream with no end line.
        const text = gunzipSync(whole).toString("utf8");
        const lines = text.split("\n");
        const shorter = join(dir, "shorter.gz");
        writeFileSync(shorter, gzipSync(`${lines.slice(0, -3).join("\n")}\n`));
        await assert.rejects(
          restoreBackup(shorter, { database: target.database, keys, force: false }),
          /cut short/,
        );
        // One value changed, the gzip made again: only the checksum can tell.
        const changed = join(dir, "changed.gz");
        writeFileSync(changed, gzipSync(text.replace("registry.example/app:1", "registry.evil.example/x:1")));
        await assert.rejects(
          restoreBackup(changed, { database: target.database, keys, force: false }),
          /checksum does not match/,
        );
        // A byte of the compressed file flipped.
        const flipped = Buffer.from(whole);
        const at = Math.floor(flipped.length / 2);
        flipped[at] = (flipped[at] ?? 0) ^ 0xff;
        const flippedFile = join(dir, "flipped.gz");
        writeFileSync(flippedFile, flipped);
        await assert.rejects(
          restoreBackup(flippedFile, { database: target.database, keys, force: false }),
          /damaged|checksum|cut short/,
        );
        await assert.rejects(
          restoreBackup(join(dir, "none.gz"), { database: target.database, keys, force: false }),
          /no file/,
        );
        const db = await target.open();
        try {
          assert.equal((await contents(db)).size, 0, "no table was made");
        } finally {
          await db.close();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
        await target.drop();
      }
    });

    it("a target that holds data is refused unless --force, which replaces it", async () => {
      const target = await emptyTarget(from);
      const keys = { masterKey: source.masterKey, previousMasterKeys: [], dataDir: target.dataDir };
      try {
        await restoreBackup(file, { database: target.database, keys, force: false });
        const db = await target.open();
        const before = await contents(db);
        await db.close();
        await assert.rejects(
          restoreBackup(file, { database: target.database, keys, force: false }),
          (err: Error) =>
            err instanceof RestoreRefused && /not empty/.test(err.message) && /--force/.test(err.message),
        );
        const report = await restoreBackup(file, { database: target.database, keys, force: true });
        assert.ok(report.rows > 0);
        const again = await target.open();
        try {
          assert.deepEqual(await contents(again), before);
        } finally {
          await again.close();
        }
      } finally {
        await target.drop();
      }
    });
  });
}
