import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { sql } from "drizzle-orm";
import { pgTable, text, uuid } from "drizzle-orm/pg-core";
import { bootstrap } from "../../src/bootstrap.ts";
import { loadConfig } from "../../src/config/load.ts";
import { revisionEnvelopes, secretContextId } from "../../src/core/revisions/secrets-store.ts";
import { DecryptionError, encryptionContext, Keyring } from "../../src/crypto/envelope.ts";
import { addKeyToFile, keyFilePath, loadKeyring } from "../../src/crypto/master-key.ts";
import { rotateSecrets } from "../../src/crypto/rotate.ts";
import { rows } from "../../src/db/client.ts";
import { envelopeColumn } from "../../src/db/envelopes.ts";
import { createTestDatabase, DB_KINDS } from "../helpers/databases.ts";

describe("envelope encryption", () => {
  const ring = new Keyring(randomBytes(32));

  it("round-trips, with a fresh nonce and data key every time", () => {
    const a = ring.encrypt("hunter2", "t.c:1");
    const b = ring.encrypt("hunter2", "t.c:1");
    assert.notEqual(a, b);
    assert.ok(!a.includes("hunter2"));
    assert.equal(ring.decrypt(a, "t.c:1"), "hunter2");
    assert.equal(ring.kidOf(a), ring.activeKid);
  });

  it("refuses another context (a value copied to another row)", () => {
    const a = ring.encrypt("v", "t.c:1");
    assert.throws(() => ring.decrypt(a, "t.c:2"), DecryptionError);
  });

  it("refuses a tampered ciphertext", () => {
    const a = ring.encrypt("value", "ctx");
    const parts = a.split(".");
    const body = Buffer.from(parts[3] as string, "base64url");
    body[body.length - 20] = (body[body.length - 20] as number) ^ 1;
    parts[3] = body.toString("base64url");
    assert.throws(() => ring.decrypt(parts.join("."), "ctx"), DecryptionError);
    assert.throws(() => ring.decrypt("garbage", "ctx"), DecryptionError);
  });

  it("reads values under a previous key and refuses an unknown key", () => {
    const oldKey = randomBytes(32);
    const old = new Keyring(oldKey);
    const value = old.encrypt("s3cret", "ctx");
    const rotated = new Keyring(randomBytes(32), [oldKey]);
    assert.equal(rotated.decrypt(value, "ctx"), "s3cret");
    const fresh = rotated.reencrypt(value, "ctx");
    assert.equal(rotated.kidOf(fresh), rotated.activeKid);
    assert.throws(() => new Keyring(randomBytes(32)).decrypt(value, "ctx"), /not configured/);
  });
});

describe("master key file", () => {
  it("is generated once into the data dir with mode 0600, and grows on rotation", () => {
    const dir = mkdtempSync(join(tmpdir(), "sw-key-"));
    const config = loadConfig({ SLIPWAY_DATA_DIR: dir });
    const first = loadKeyring(config);
    assert.equal(first.source, "generated");
    assert.equal(statSync(keyFilePath(dir)).mode & 0o777, 0o600);
    const again = loadKeyring(config);
    assert.equal(again.source, "file");
    assert.equal(again.keyring.activeKid, first.keyring.activeKid);
    const value = first.keyring.encrypt("x", "ctx");
    addKeyToFile(dir);
    const next = loadKeyring(config).keyring;
    assert.notEqual(next.activeKid, first.keyring.activeKid);
    assert.equal(next.decrypt(value, "ctx"), "x");
    assert.equal(readFileSync(keyFilePath(dir), "utf8").trim().split("\n").length, 2);
  });

  it("prefers SLIPWAY_MASTER_KEY over the file", () => {
    const key = randomBytes(32).toString("base64");
    const { keyring, source } = loadKeyring(loadConfig({ SLIPWAY_MASTER_KEY: key }));
    assert.equal(source, "env");
    assert.equal(keyring.activeKid, new Keyring(Buffer.from(key, "base64")).activeKid);
  });
});

/** A table of envelopes, as a store would declare one. */
const rotTest = pgTable("rot_test", { id: uuid("id").primaryKey(), secret: text("secret") });

for (const kind of DB_KINDS) {
  describe(`key rotation over stored rows [${kind}]`, () => {
    it("re-encrypts every value not under the active key and leaves current ones alone", async () => {
      const { db, drop } = await createTestDatabase(kind);
      try {
        await db.exec("CREATE TABLE rot_test (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), secret text)");
        const oldKey = randomBytes(32);
        const old = new Keyring(oldKey);
        const ids: string[] = [];
        for (let i = 0; i < 450; i++) {
          const [row] = await rows<{ id: string }>(
            db.orm,
            sql`INSERT INTO rot_test DEFAULT VALUES RETURNING id::text`,
          );
          const id = (row as { id: string }).id;
          ids.push(id);
          const value = old.encrypt(`value-${i}`, encryptionContext("rot_test", "secret", id));
          await rows(db.orm, sql`UPDATE rot_test SET secret = ${value} WHERE id = ${id}::uuid`);
        }
        await rows(db.orm, sql`INSERT INTO rot_test (secret) VALUES (NULL)`);
        const newKey = randomBytes(32);
        const ring = new Keyring(newKey, [oldKey]);
        const columns = [envelopeColumn(db.orm, rotTest, rotTest.secret)];
        const [result] = await rotateSecrets(ring, columns);
        assert.equal(result?.rewrapped, 450);
        const [again] = await rotateSecrets(ring, columns);
        assert.equal(again?.rewrapped, 0);
        const stored = await rows<{ id: string; secret: string }>(
          db.orm,
          sql`SELECT id::text, secret FROM rot_test WHERE secret IS NOT NULL`,
        );
        // After rotation the old key can be dropped: the new key alone reads everything.
        const onlyNew = new Keyring(newKey);
        assert.equal(stored.length, 450);
        for (const r of stored) {
          assert.equal(onlyNew.kidOf(r.secret), onlyNew.activeKid);
          const i = ids.indexOf(r.id);
          assert.equal(
            onlyNew.decrypt(r.secret, encryptionContext("rot_test", "secret", r.id)),
            `value-${i}`,
          );
        }
      } finally {
        await drop();
      }
    });
  });

  describe(`key rotation of revision secrets, bound to their row or to deployment and name [${kind}]`, () => {
    it("re-wraps both kinds; each still opens, under the new key alone", async () => {
      const { db, drop } = await createTestDatabase(kind);
      try {
        await bootstrap(db, `sw_${randomBytes(32).toString("hex")}`);
        const [ws] = await rows<{ id: string; organization_id: string }>(
          db.orm,
          sql`SELECT id::text, organization_id::text FROM workspaces LIMIT 1`,
        );
        assert.ok(ws);
        const [dep] = await rows<{ id: string }>(
          db.orm,
          sql`INSERT INTO deployments (organization_id, workspace_id, name, source)
              VALUES (${ws.organization_id}, ${ws.id}, 'rot', 'external_docker') RETURNING id::text`,
        );
        assert.ok(dep);
        const [rev] = await rows<{ id: string }>(
          db.orm,
          sql`INSERT INTO revisions (deployment_id, seq, status, source)
              VALUES (${dep.id}, 1, 'QUEUED', 'external_docker') RETURNING id::text`,
        );
        assert.ok(rev);
        const oldKey = randomBytes(32);
        const old = new Keyring(oldKey);
        const legacyId = crypto.randomUUID();
        const legacy = { id: legacyId, name: "LEGACY", deployment_id: null };
        const bound = { id: crypto.randomUUID(), name: "BOUND", deployment_id: dep.id };
        for (const [i, s] of [legacy, bound].entries()) {
          const enc = old.encrypt(
            `v-${s.name}`,
            encryptionContext("revision_secrets", "value_enc", secretContextId(s)),
          );
          await rows(
            db.orm,
            sql`INSERT INTO revision_secrets (id, revision_id, deployment_id, name, value_enc, position)
                VALUES (${s.id}, ${rev.id}, ${s.deployment_id}, ${s.name}, ${enc}, ${i})`,
          );
        }
        const newKey = randomBytes(32);
        const [result] = await rotateSecrets(new Keyring(newKey, [oldKey]), revisionEnvelopes(db.orm));
        assert.equal(result?.rewrapped, 2);
        const onlyNew = new Keyring(newKey);
        const stored = await rows<{
          id: string;
          name: string;
          value_enc: string;
          deployment_id: string | null;
        }>(
          db.orm,
          sql`SELECT id::text, name, value_enc, deployment_id::text FROM revision_secrets ORDER BY position`,
        );
        assert.deepEqual(
          stored.map((r) =>
            onlyNew.decrypt(
              r.value_enc,
              encryptionContext("revision_secrets", "value_enc", secretContextId(r)),
            ),
          ),
          ["v-LEGACY", "v-BOUND"],
        );
      } finally {
        await drop();
      }
    });
  });
}
