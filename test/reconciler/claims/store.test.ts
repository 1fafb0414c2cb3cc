import assert from "node:assert/strict";
import { afterEach, it } from "node:test";
import { sql } from "drizzle-orm";
import { rows } from "../../../src/db/client.ts";
import { claimRevisions } from "../../../src/reconciler/claims/store.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { insertDeployment, queueRevision } from "../../helpers/reconciler.ts";

const LEASE_MS = 60_000;

/** One queued revision of a new deployment in `workspace` (one deployment's revisions go in order). */
async function queueIn(ctx: TestContext, workspace: { orgId: string; workspaceId: string }): Promise<string> {
  return queueRevision(ctx, await insertDeployment(ctx, { tenant: workspace }));
}

/** Ends every revision the test left in progress, so the next test's claims see only its own. */
async function endAll(ctx: TestContext): Promise<void> {
  await ctx.db.orm.execute(
    sql`UPDATE revisions SET status = 'INTERRUPTED', lease_owner = NULL, lease_expires_at = NULL
         WHERE status NOT IN ('DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED')`,
  );
}

forEachDatabase("revision claims: builds per workspace, fair across workspaces", (suite) => {
  afterEach(() => endAll(suite.ctx));

  const tenants = (ctx: TestContext) => ({
    a: { orgId: ctx.orgId, workspaceId: ctx.workspaceId },
    b: { orgId: ctx.orgId, workspaceId: ctx.workspace2Id },
    c: ctx.other,
  });

  it("takes each workspace's oldest in turn, and no more than the per-workspace limit", async () => {
    const ctx = suite.ctx;
    const { a, b, c } = tenants(ctx);
    const a1 = await queueIn(ctx, a);
    const a2 = await queueIn(ctx, a);
    const a3 = await queueIn(ctx, a);
    await queueIn(ctx, a); // A's fourth, which no claim below reaches
    const b1 = await queueIn(ctx, b);
    const c1 = await queueIn(ctx, c);
    const order: string[] = [];
    for (;;) {
      const got = await claimRevisions(ctx.db, "w1", LEASE_MS, 1, 2);
      if (got.length === 0) break;
      assert.equal(got.length, 1);
      order.push(got[0]?.id ?? "");
    }
    // Round-robin by workspace, oldest first within one; A's third waits for a free build slot.
    assert.deepEqual(order, [a1, b1, c1, a2]);

    // A build that moved on to deploying frees its slot: A's next one (the oldest) may start.
    await ctx.db.orm.execute(sql`UPDATE revisions SET status = 'AWAITING_DEPLOY' WHERE id = ${a1}`);
    assert.deepEqual(
      (await claimRevisions(ctx.db, "w1", LEASE_MS, 10, 2)).map((r) => r.id),
      [a3],
    );
    // A lease that ran out (its worker died) holds no slot either.
    await ctx.db.orm.execute(
      sql`UPDATE revisions SET lease_expires_at = now() - interval '1 second' WHERE id = ${a2}`,
    );
    assert.deepEqual(
      (await claimRevisions(ctx.db, "w2", LEASE_MS, 10, 2)).map((r) => r.id),
      [a2],
      "the expired lease is taken over; A's last still waits (two builds run)",
    );
  });

  it("claims the whole backlog at once in fair order when the limit allows it", async () => {
    const ctx = suite.ctx;
    const { a, b } = tenants(ctx);
    const a1 = await queueIn(ctx, a);
    const a2 = await queueIn(ctx, a);
    const a3 = await queueIn(ctx, a);
    const b1 = await queueIn(ctx, b);
    const got = (await claimRevisions(ctx.db, "w1", LEASE_MS, 3, 1000)).map((r) => r.id).sort();
    // Three slots: A's first and B's first (each workspace's first build), then A's second.
    assert.deepEqual(got, [a1, a2, b1].sort());
    assert.deepEqual(
      (await claimRevisions(ctx.db, "w1", LEASE_MS, 3, 1000)).map((r) => r.id),
      [a3],
    );
  });

  it("holds the limit when many workers claim at the same moment", async () => {
    const ctx = suite.ctx;
    const { a } = tenants(ctx);
    // Connections opened beforehand, so the claims below really overlap on PostgreSQL.
    await Promise.all(Array.from({ length: 8 }, () => ctx.db.orm.execute(sql`SELECT pg_sleep(0.05)`)));
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 8; i++) await queueIn(ctx, a);
      const claims = await Promise.all(
        Array.from({ length: 8 }, (_, i) => claimRevisions(ctx.db, `worker-${i}`, LEASE_MS, 2, 2)),
      );
      assert.equal(claims.flat().length, 2, `round ${round}: ${JSON.stringify(claims)}`);
      const [leased] = await rows<{ n: number }>(
        ctx.db.orm,
        sql`SELECT count(*)::int AS n FROM revisions WHERE lease_owner IS NOT NULL AND lease_expires_at > now()`,
      );
      assert.equal(leased?.n, 2);
      await endAll(ctx);
    }
  });

  it("leaves a deployment's newer revision until its older one is done, and skips deletions", async () => {
    const ctx = suite.ctx;
    const { a } = tenants(ctx);
    const dep = await insertDeployment(ctx, { tenant: a });
    const first = await queueRevision(ctx, dep);
    const second = await queueRevision(ctx, dep, { skipOlder: false });
    const gone = await insertDeployment(ctx, { tenant: a });
    await queueRevision(ctx, gone);
    await ctx.db.orm.execute(sql`UPDATE deployments SET status = 'AWAITING_DELETE' WHERE id = ${gone}`);
    assert.deepEqual(
      (await claimRevisions(ctx.db, "w1", LEASE_MS, 10, 10)).map((r) => r.id),
      [first],
    );
    await ctx.db.orm.execute(sql`UPDATE revisions SET status = 'DEPLOYED' WHERE id = ${first}`);
    assert.deepEqual(
      (await claimRevisions(ctx.db, "w1", LEASE_MS, 10, 10)).map((r) => r.id),
      [second],
    );
  });
});
