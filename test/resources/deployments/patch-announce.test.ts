import assert from "node:assert/strict";
import { it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "drizzle-orm";
import {
  ANNOUNCED_SETTING,
  EVENTS_CHANNEL,
  RECORDS_CHANNEL,
  WORK_CHANNEL,
} from "../../../src/db/channels.ts";
import { call, createDocker, type Deployment } from "../../helpers/deployments.ts";
import { eventually } from "../../helpers/eventually.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

/**
 * Issue 13: a revision-creating PATCH sends no NOTIFY inside its transaction (PostgreSQL commits
 * notifying transactions one at a time, through their WAL flush); it announces the reconciler's
 * work, the workspace's events and its changed records after commit, once each, and the read
 * cache's triggers stay silent for that deployment in that transaction only (migration 0021).
 */
forEachDatabase("PATCH /v2/deployments/{id}: notifications after commit", (suite) => {
  /** What arrives on the three channels from now on. */
  async function listening() {
    const heard = new Map<string, string[]>([
      [WORK_CHANNEL, []],
      [EVENTS_CHANNEL, []],
      [RECORDS_CHANNEL, []],
    ]);
    const stops = await Promise.all(
      [...heard.keys()].map((channel) =>
        suite.ctx.db.listen(channel, (payload) => heard.get(channel)?.push(payload)),
      ),
    );
    return {
      heard: (channel: string) => heard.get(channel) ?? [],
      clear: () => {
        for (const list of heard.values()) list.length = 0;
      },
      stop: () => Promise.all(stops.map((stop) => stop())),
    };
  }
  /** Long enough for a second notification of the same change to have arrived, were one sent. */
  const settle = () => sleep(300);

  it("announces the new revision's work, its events and its records once each", async () => {
    const d = await createDocker(suite.ctx);
    const on = await listening();
    try {
      await settle();
      on.clear();
      const res = await call<Deployment>(suite.ctx, "PATCH", `/v2/deployments/${d.id}`, {
        source_revision_config: { image_uri: "registry.example/app:announced" },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const revisionId = res.body.latest_revision_id;
      await eventually(
        "the work notification",
        () => on.heard(WORK_CHANNEL).includes(String(revisionId)),
        60_000,
      );
      await settle();
      assert.deepEqual(on.heard(WORK_CHANNEL), [revisionId]);
      assert.deepEqual(on.heard(EVENTS_CHANNEL), [d.tenant_id]);
      // Twice, had the triggers announced the same change inside the transaction as well.
      assert.deepEqual(on.heard(RECORDS_CHANNEL), [d.tenant_id]);
    } finally {
      await on.stop();
    }
  });

  it("the triggers stay silent only for the announced deployment, and only in its transaction", async () => {
    const ctx = suite.ctx;
    const a = await createDocker(ctx);
    const b = await createDocker(ctx, {}, { key: ctx.keys.boundMember });
    assert.notEqual(a.tenant_id, b.tenant_id);
    const on = await listening();
    try {
      await settle();
      on.clear();
      await ctx.db.transaction(async (tx) => {
        await tx.query(sql`SELECT set_config(${ANNOUNCED_SETTING}, ${a.id}, true)`);
        await tx.query(sql`UPDATE revisions SET status_message = 'quiet' WHERE deployment_id = ${a.id}`);
        await tx.query(sql`UPDATE deployments SET image_version = 'quiet' WHERE id = ${a.id}`);
        await tx.query(sql`UPDATE revisions SET status_message = 'heard' WHERE deployment_id = ${b.id}`);
      });
      await eventually(
        "b's workspace",
        () => on.heard(RECORDS_CHANNEL).includes(String(b.tenant_id)),
        60_000,
      );
      await settle();
      assert.deepEqual(on.heard(RECORDS_CHANNEL), [b.tenant_id]);
      // Any later transaction announces a's changes through the triggers again.
      await ctx.db.orm.execute(sql`UPDATE deployments SET image_version = 'heard' WHERE id = ${a.id}`);
      await eventually(
        "a's workspace",
        () => on.heard(RECORDS_CHANNEL).includes(String(a.tenant_id)),
        60_000,
      );
    } finally {
      await on.stop();
    }
  });
});
