import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Announcer, type Note } from "../../src/db/announce.ts";
import type { Database } from "../../src/db/client.ts";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../helpers/databases.ts";
import { eventually } from "../helpers/eventually.ts";

/** Notifications announced after commit (db/announce.ts): batched, folded, never before commit. */
describe("Announcer", () => {
  const recording = () => {
    const sent: [string[], string[]][] = [];
    const announcer = new Announcer(async (channels, payloads) => {
      sent.push([channels, payloads]);
    });
    return { sent, announcer };
  };

  it("sends what is announced within its window as one statement, equal notes once", async () => {
    const { sent, announcer } = recording();
    await Promise.all([
      announcer.announce([
        ["a", "1"],
        ["b", "2"],
      ]),
      announcer.announce([
        ["a", "1"],
        ["a", "3"],
      ]),
    ]);
    assert.deepEqual(sent, [
      [
        ["a", "b", "a"],
        ["1", "2", "3"],
      ],
    ]);
    await announcer.announce([["c", "4"]]);
    assert.equal(sent.length, 2, "a later announcement is a statement of its own");
  });

  it("sends nothing for no notes, and a failed send does not fail the writer", async () => {
    const { sent, announcer } = recording();
    await announcer.announce([]);
    assert.equal(sent.length, 0);
    const failing = new Announcer(async () => {
      throw new Error("connection lost");
    });
    await failing.announce([["a", "1"]]);
  });

  it("drain sends what is pending at once and waits for it", async () => {
    let release = () => {};
    const sent: string[][] = [];
    const slow = new Announcer(async (channels) => {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      sent.push(channels);
    }, 60_000);
    const pending = slow.announce([["a", "1"]]);
    const drained = slow.drain();
    await sleep(10);
    assert.equal(sent.length, 0, "drain waits for the statement in flight");
    release();
    await drained;
    await pending;
    assert.deepEqual(sent, [["a"]]);
  });
});

for (const kind of DB_KINDS) {
  describe(`Database.announce and Transaction.announce [${kind}]`, () => {
    let test: TestDatabase;
    let db: Database;
    const heard: string[] = [];
    let unlisten: () => Promise<void>;

    before(async () => {
      test = await createTestDatabase(kind);
      db = test.db;
      unlisten = await db.listen("slipway_test_announce", (payload) => heard.push(payload));
    });
    after(async () => {
      await unlisten?.();
      await test?.drop();
    });

    const note = (payload: string): Note => ["slipway_test_announce", payload];

    it("delivers announced notes to listeners", async () => {
      await db.announce([note("now-1"), note("now-2")]);
      await eventually(
        "both notes",
        () =>
          heard
            .filter((p) => p.startsWith("now-"))
            .sort()
            .join() === "now-1,now-2",
        60_000,
      );
    });

    it("a transaction's notes go out after its commit, and none after a rollback", async () => {
      await db.transaction(async (tx) => {
        tx.announce([note("committed")]);
        // Longer than the window: nothing may be sent while the transaction is open.
        await sleep(50);
        assert.ok(!heard.includes("committed"), "not before commit");
      });
      await eventually("the committed note", () => heard.includes("committed"), 60_000);
      await assert.rejects(
        db.transaction(async (tx) => {
          tx.announce([note("rolled-back")]);
          throw new Error("abort");
        }),
        /abort/,
      );
      await db.announce([note("after-rollback")]);
      await eventually("the later note", () => heard.includes("after-rollback"), 60_000);
      assert.ok(!heard.includes("rolled-back"));
    });
  });
}
