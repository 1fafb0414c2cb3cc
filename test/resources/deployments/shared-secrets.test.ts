import assert from "node:assert/strict";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import { readRevisionSecrets } from "../../../src/core/deployments/secrets.ts";
import { secretRows } from "../../../src/core/revisions/secrets-store.ts";
import { rows } from "../../../src/db/client.ts";
import { call, createDocker, type Deployment } from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

/**
 * Issue 13 (migration 0022): a new revision whose secrets are exactly those of the revision it
 * follows (nothing sent, or every value sent masked in the same order, every envelope copied as it
 * is) shares that revision's rows instead of copying them, so the usual PATCH writes no secret
 * rows. Everything that reads a revision's secrets (the reconciler, a redeploy, the next PATCH)
 * follows the pointer; a change gives the revision rows of its own.
 */
forEachDatabase("revision secrets shared while unchanged", (suite) => {
  const patch = (id: string, body: unknown) =>
    call<Deployment>(suite.ctx, "PATCH", `/v2/deployments/${id}`, body);
  const image = (tag: string) => ({ source_revision_config: { image_uri: `registry.example/app:${tag}` } });

  async function rowCount(ctx: TestContext, deploymentId: string): Promise<number> {
    const [row] = await rows<{ n: number }>(
      ctx.db.orm,
      sql`SELECT count(*)::int AS n FROM revision_secrets WHERE deployment_id = ${deploymentId}::uuid`,
    );
    return row?.n ?? -1;
  }

  async function pointer(ctx: TestContext, revisionId: string | null): Promise<string | null> {
    const [row] = await rows<{ secrets_revision_id: string | null }>(
      ctx.db.orm,
      sql`SELECT secrets_revision_id FROM revisions WHERE id = ${revisionId}::uuid`,
    );
    assert.ok(row, `revision ${revisionId} exists`);
    return row.secrets_revision_id;
  }

  const values = async (ctx: TestContext, revisionId: string | null) =>
    (await readRevisionSecrets(ctx.db.orm, ctx.keyring, String(revisionId))).map((s) => [s.name, s.value]);

  it("an unchanged list is shared, one hop from the revision that holds the rows; a change gets rows of its own", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx, {
      secrets: [
        { name: "A", value: "a-1" },
        { name: "B", value: "b-1" },
      ],
    });
    const first = d.latest_revision_id;
    assert.equal(await rowCount(ctx, d.id), 2);
    assert.equal(await pointer(ctx, first), null, "the first revision holds its own rows");

    // Nothing sent, then every value sent masked in the same order: no rows written.
    const same = await patch(d.id, image("2"));
    assert.equal(same.status, 200, JSON.stringify(same.body));
    const masked = await patch(d.id, {
      secrets: [
        { name: "A", value: "********" },
        { name: "B", value: "********" },
      ],
    });
    assert.equal(masked.status, 200, JSON.stringify(masked.body));
    assert.equal(await rowCount(ctx, d.id), 2);
    for (const res of [same, masked]) {
      assert.equal(await pointer(ctx, res.body.latest_revision_id), first);
      assert.deepEqual(res.body.secrets, [
        { name: "A", value: "********" },
        { name: "B", value: "********" },
      ]);
      // What the reconciler puts in the app's environment.
      assert.deepEqual(await values(ctx, res.body.latest_revision_id), [
        ["A", "a-1"],
        ["B", "b-1"],
      ]);
    }
    const firstIds = (await secretRows(ctx.db.orm, String(first))).map((s) => s.id);
    assert.deepEqual(
      (await secretRows(ctx.db.orm, String(masked.body.latest_revision_id))).map((s) => s.id),
      firstIds,
    );

    // A new value: the revision gets rows of its own, every one of them.
    const changed = await patch(d.id, {
      secrets: [
        { name: "A", value: "********" },
        { name: "B", value: "b-2" },
      ],
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    const changedId = changed.body.latest_revision_id;
    assert.equal(await pointer(ctx, changedId), null);
    assert.equal(await rowCount(ctx, d.id), 4);
    assert.deepEqual(await values(ctx, changedId), [
      ["A", "a-1"],
      ["B", "b-2"],
    ]);
    // The earlier revisions keep theirs.
    assert.deepEqual(await values(ctx, same.body.latest_revision_id), [
      ["A", "a-1"],
      ["B", "b-1"],
    ]);

    // The next unchanged PATCH shares the changed revision's rows (never a chain of pointers).
    const after = await patch(d.id, image("3"));
    assert.equal(await pointer(ctx, after.body.latest_revision_id), changedId);

    // Read afresh (the kept state went stale behind this process): the read follows the pointer too.
    await ctx.db.orm.execute(sql`UPDATE deployments SET updated_at = now() WHERE id = ${d.id}::uuid`);
    const fresh = await patch(d.id, image("4"));
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    assert.equal(await pointer(ctx, fresh.body.latest_revision_id), changedId);
    assert.equal(await rowCount(ctx, d.id), 4);
    assert.deepEqual(await values(ctx, fresh.body.latest_revision_id), [
      ["A", "a-1"],
      ["B", "b-2"],
    ]);

    // Dropping a name is a change as well.
    const dropped = await patch(d.id, { secrets: [{ name: "A", value: "********" }] });
    assert.equal(await pointer(ctx, dropped.body.latest_revision_id), null);
    assert.deepEqual(await values(ctx, dropped.body.latest_revision_id), [["A", "a-1"]]);
  });

  it("a redeploy of an earlier revision shares that revision's rows", async () => {
    const ctx = suite.ctx;
    const d = await createDocker(ctx, { secrets: [{ name: "S", value: "first" }] });
    const first = d.latest_revision_id;
    assert.equal((await patch(d.id, { secrets: [{ name: "S", value: "second" }] })).status, 200);
    const redeploy = await call<Deployment>(
      ctx,
      "POST",
      `/v2/deployments/${d.id}/revisions/${first}/redeploy`,
    );
    assert.ok(redeploy.status < 300, JSON.stringify(redeploy.body));
    const res = await call<Deployment>(ctx, "GET", `/v2/deployments/${d.id}`);
    assert.notEqual(res.body.latest_revision_id, first);
    assert.equal(await pointer(ctx, res.body.latest_revision_id), first);
    assert.deepEqual(await values(ctx, res.body.latest_revision_id), [["S", "first"]]);
    assert.equal(await rowCount(ctx, d.id), 2);
  });
});
