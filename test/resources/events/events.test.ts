import assert from "node:assert/strict";
import { before, it } from "node:test";
import { emit } from "../../../src/core/events/emit.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { call, createDocker } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";
import { SseClient, type SseEvent } from "../../helpers/sse.ts";

const about = (id: string) => (e: SseEvent) =>
  (JSON.parse(e.data) as { data: { deployment_id?: string } }).data.deployment_id === id;

forEachDatabase("event stream", (suite, kind) => {
  let base = "";

  before(async () => {
    base = await suite.ctx.app.listen({ port: 0, host: "127.0.0.1" });
  });

  const open = (key: string, extra: Record<string, string> = {}, query = "") =>
    SseClient.open(`${base}/v2/events${query}`, { "x-api-key": key, ...extra });

  authMatrix(suite, { method: "GET", url: () => "/v2/events", workspace: true });

  it("bad query is 422", async () => {
    const ctx = suite.ctx;
    const res = await call(ctx, "GET", "/v2/events?types=deployment.exploded");
    assert.equal(res.status, 422);
    assert.equal((await call(ctx, "GET", "/v2/events?last_event_id=abc")).status, 422);
  });

  it("streams the workspace's events live; a viewer may follow; another workspace sees none of them", async () => {
    const ctx = suite.ctx;
    const mine = await open(ctx.keys.viewer);
    const theirs = await open(ctx.keys.member, { "x-tenant-id": ctx.workspace2Id });
    assert.equal(mine.status, 200);
    try {
      const d = await createDocker(ctx);
      const got = await mine.collect((e) => e.event === "revision.status_changed" && about(d.id)(e));
      const first = got.find(about(d.id));
      assert.equal(first?.event, "deployment.created");
      const body = JSON.parse(first?.data ?? "{}") as {
        type: string;
        timestamp: string;
        data: Record<string, unknown>;
      };
      assert.equal(body.type, "deployment.created");
      assert.equal(body.data.deployment_name, d.name);
      assert.equal(body.data.tenant_id, ctx.workspaceId);
      // Another workspace's event arrives on its stream; nothing of the first workspace does.
      const elsewhere = await createDocker(ctx, {}, { headers: { "x-tenant-id": ctx.workspace2Id } });
      const seen = await theirs.collect(about(elsewhere.id));
      assert.ok(!seen.some(about(d.id)));
    } finally {
      mine.close();
      theirs.close();
    }
  });

  it("resumes after a reconnect with Last-Event-ID: nothing missed, nothing twice, ids increasing", async () => {
    const ctx = suite.ctx;
    const first = await open(ctx.keys.member);
    const a = await createDocker(ctx);
    const before = await first.collect((e) => e.event === "revision.status_changed" && about(a.id)(e));
    first.close();
    const lastId = before.at(-1)?.id ?? "";
    // While nobody listens.
    const b = await createDocker(ctx);
    const c = await createDocker(ctx);
    const again = await open(ctx.keys.member, { "last-event-id": lastId });
    try {
      const after = await again.collect((e) => e.event === "revision.status_changed" && about(c.id)(e));
      const ids = [...before, ...after].map((e) => Number(e.id));
      assert.deepEqual(
        ids,
        [...ids].sort((x, y) => x - y),
      );
      assert.equal(new Set(ids).size, ids.length);
      assert.deepEqual(
        after.map((e) => `${e.event}:${about(b.id)(e) ? "b" : about(c.id)(e) ? "c" : "?"}`),
        [
          "deployment.created:b",
          "revision.status_changed:b",
          "deployment.created:c",
          "revision.status_changed:c",
        ],
      );
    } finally {
      again.close();
    }
    // The query parameter does the same for clients that cannot set headers.
    const byQuery = await open(ctx.keys.member, {}, `?last_event_id=${lastId}`);
    try {
      assert.ok(about(b.id)(await byQuery.next()));
    } finally {
      byQuery.close();
    }
  });

  it("types narrows the stream", async () => {
    const ctx = suite.ctx;
    const only = await open(ctx.keys.member, {}, "?types=revision.status_changed");
    try {
      const d = await createDocker(ctx);
      const e = await only.next();
      assert.equal(e.event, "revision.status_changed");
      assert.ok(about(d.id)(e));
    } finally {
      only.close();
    }
  });

  if (kind === "postgres") {
    it("an event committed after a later one still comes after it on the stream (ids in commit order)", async () => {
      const ctx = suite.ctx;
      const stream = await open(ctx.keys.member);
      const event = (name: string) => ({
        organizationId: ctx.orgId,
        workspaceId: ctx.workspaceId,
        type: "listener.status_changed" as const,
        data: { listener_id: name, status: "READY" },
      });
      try {
        let release: () => void = () => {};
        const held = new Promise<void>((r) => {
          release = r;
        });
        // Emitted first, committed last.
        const slow = ctx.db.orm.transaction(async (tx) => {
          await emit(tx, event("slow"));
          await held;
        });
        await emit(ctx.db.orm, event("fast"));
        const fast = await stream.next();
        assert.match(fast.data, /"fast"/);
        release();
        await slow;
        const late = await stream.next();
        assert.match(late.data, /"slow"/);
        assert.ok(Number(late.id) > Number(fast.id));
      } finally {
        stream.close();
      }
    });
  }
});
