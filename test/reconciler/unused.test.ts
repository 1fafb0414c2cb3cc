import assert from "node:assert/strict";
import { it } from "node:test";
import { sql } from "drizzle-orm";
import { rows } from "../../src/db/client.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import {
  deploymentRow,
  insertDeployment,
  logLines,
  makeReconciler,
  queueRevision,
  reconcilerConfig,
  until,
} from "../helpers/reconciler.ts";
import { ScriptedRuntime } from "../helpers/scripted-runtime.ts";
import { waitForRevision } from "../helpers/wait.ts";

forEachDatabase("UNUSED deployments", (suite) => {
  it("an idle READY deployment becomes UNUSED, a request makes it READY, and prod never becomes UNUSED", async () => {
    const ctx = suite.ctx;
    const runtime = new ScriptedRuntime();
    const dev = await insertDeployment(ctx);
    const prod = await insertDeployment(ctx);
    await ctx.db.orm.execute(sql`UPDATE deployments SET deployment_type = 'prod' WHERE id = ${prod}`);
    const devRev = await queueRevision(ctx, dev);
    const prodRev = await queueRevision(ctx, prod);
    const r = makeReconciler(ctx, runtime, { config: reconcilerConfig(ctx, { unusedAfterS: 1 }) });
    await r.start();
    try {
      assert.equal(await waitForRevision(ctx.db, devRev), "DEPLOYED");
      assert.equal(await waitForRevision(ctx.db, prodRev), "DEPLOYED");
      await until("dev to be UNUSED", async () => (await deploymentRow(ctx, dev))?.status === "UNUSED");
      // The note is stored after the move commits: a reader may see UNUSED a moment before it.
      await until("the UNUSED note in the log", async () =>
        (await logLines(ctx, devRev, "deploy")).some((l) => l.includes("no request for 1 s")),
      );
      // prod is idle as long, and stays READY.
      const [idle] = await rows<{ idle: boolean }>(
        ctx.db.orm,
        sql`SELECT updated_at < now() - interval '1 second' AS idle FROM deployments WHERE id = ${prod}`,
      );
      if (!idle?.idle) await new Promise((resolve) => setTimeout(resolve, 1200));
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal((await deploymentRow(ctx, prod))?.status, "READY");

      const at = Date.now();
      runtime.lastRequests.set(dev, at);
      await until("dev to be READY", async () => (await deploymentRow(ctx, dev))?.status === "READY");
      const [stored] = await rows<{ ms: number }>(
        ctx.db.orm,
        sql`SELECT (extract(epoch FROM last_request_at) * 1000)::float8 AS ms FROM deployments WHERE id = ${dev}`,
      );
      assert.ok(Math.abs((stored?.ms ?? 0) - at) < 2, "the request time is stored");
      await until("the READY note in the log", async () =>
        (await logLines(ctx, devRev, "deploy")).some((l) => l.includes("READY again")),
      );
    } finally {
      await r.stop();
    }
  });
});
