import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { encryptionContext, Keyring } from "../../../src/crypto/envelope.ts";
import { nextSecrets, sealSecrets } from "../../../src/resources/deployments/secrets.ts";
import { type StoredSecret, secretContextId } from "../../../src/resources/revisions/store.ts";

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

/** What a revision's secrets become in the next one (the envelope is bound to deployment and name). */
describe("nextSecrets", () => {
  const old = randomBytes(32);
  const before = new Keyring(old);
  const stored: StoredSecret[] = sealSecrets(before, DEPLOYMENT, [
    { name: "KEEP", value: "k" },
    { name: "OTHER", value: "o" },
  ]).map((s, i) => ({ ...s, id: `row-${i}`, deployment_id: DEPLOYMENT }));

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
