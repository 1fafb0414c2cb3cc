import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { nextSecrets, sealSecrets, unchangedRows } from "../../../src/core/deployments/secrets.ts";
import { type StoredSecret, secretContextId } from "../../../src/core/revisions/secrets-store.ts";
import { encryptionContext, Keyring } from "../../../src/crypto/envelope.ts";

const DEPLOYMENT = "6f1c2f4e-0000-4000-8000-000000000001";
const open = (keyring: Keyring, s: { name: string; value_enc: string }) =>
  keyring.decrypt(
    s.value_enc,
    encryptionContext(
      "revision_secrets",
      "value_enc",
      secretContextId({ id: "", deployment_id: DEPLOYMENT, ...s }),
    ),
  );

/** Stored rows of one revision holding these values, sealed for the deployment. */
const storedRows = (keyring: Keyring, values: { name: string; value: string }[]): StoredSecret[] =>
  sealSecrets(keyring, DEPLOYMENT, values).map((s, i) => ({
    ...s,
    id: `row-${i}`,
    revision_id: "rev-1",
    deployment_id: DEPLOYMENT,
  }));

/** What a revision's secrets become in the next one (the envelope is bound to deployment and name). */
describe("nextSecrets", () => {
  const old = randomBytes(32);
  const before = new Keyring(old);
  const stored = storedRows(before, [
    { name: "KEEP", value: "k" },
    { name: "OTHER", value: "o" },
  ]);

  it("copies a kept value's envelope as it is under the active key; only sent values are sealed", () => {
    const next = nextSecrets(before, DEPLOYMENT, stored, [
      { name: "KEEP", value: "********" },
      { name: "NEW", value: "n" },
    ]);
    assert.equal(next[0]?.value_enc, stored[0]?.value_enc);
    assert.deepEqual(
      next.map((s) => [s.name, open(before, s)]),
      [
        ["KEEP", "k"],
        ["NEW", "n"],
      ],
    );
  });

  it("seals again a kept value under a key that is no longer active (a rotation passed it)", () => {
    // The server runs with a new active key, the old one only for reading: the stored envelopes,
    // read before a rotation rewrote them, must not be copied into a new revision under the old key.
    const active = randomBytes(32);
    const after = new Keyring(active, [old]);
    const next = nextSecrets(after, DEPLOYMENT, stored, null);
    for (const s of next) {
      assert.ok(s.value_enc.startsWith(after.activePrefix), `${s.name} is under the active key`);
    }
    // They open with the active key alone, as after the old one is retired.
    assert.deepEqual(
      next.map((s) => [s.name, open(new Keyring(active), s)]),
      [
        ["KEEP", "k"],
        ["OTHER", "o"],
      ],
    );
  });
});

/** When a new revision shares the rows of the one it follows instead of copying them (migration 0022). */
describe("unchangedRows", () => {
  const key = randomBytes(32);
  const keyring = new Keyring(key);
  const stored = storedRows(keyring, [
    { name: "A", value: "a" },
    { name: "B", value: "b" },
  ]);

  it("shares the rows when nothing was sent, or every value was sent masked in the same order", () => {
    assert.equal(unchangedRows(nextSecrets(keyring, DEPLOYMENT, stored, null), stored), stored);
    const masked = [
      { name: "A", value: "********" },
      { name: "B", value: "********" },
    ];
    assert.equal(unchangedRows(nextSecrets(keyring, DEPLOYMENT, stored, masked), stored), stored);
  });

  it("writes rows of its own for a new value, a dropped or added name, a new order, or an envelope sealed again", () => {
    const lists = [
      [
        { name: "A", value: "********" },
        { name: "B", value: "new" },
      ],
      [{ name: "A", value: "********" }],
      [
        { name: "A", value: "********" },
        { name: "B", value: "********" },
        { name: "C", value: "c" },
      ],
      [
        { name: "B", value: "********" },
        { name: "A", value: "********" },
      ],
    ];
    for (const sent of lists) {
      assert.equal(
        unchangedRows(nextSecrets(keyring, DEPLOYMENT, stored, sent), stored),
        null,
        JSON.stringify(sent),
      );
    }
    // Under a key that is no longer active: sealed again, so not the stored rows.
    const rotated = new Keyring(randomBytes(32), [key]);
    assert.equal(unchangedRows(nextSecrets(rotated, DEPLOYMENT, stored, null), stored), null);
    // Rows bound to their row id (before migration 0008) are sealed again too.
    const legacy = stored.map((s) => ({
      ...s,
      deployment_id: null,
      value_enc: keyring.encrypt("v", encryptionContext("revision_secrets", "value_enc", s.id)),
    }));
    assert.equal(unchangedRows(nextSecrets(keyring, DEPLOYMENT, legacy, null), legacy), null);
  });

  it("has nothing to share when there are no stored secrets", () => {
    assert.equal(unchangedRows([], []), null);
  });
});
