import assert from "node:assert/strict";
import { before, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createSlipway, waitForRevision } from "slipway/sdk";
import type { Reconciler } from "../../src/reconciler/reconciler.ts";
import { freePort } from "../e2e/stack.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { insertDeployment, makeReconciler, queueRevision, until } from "../helpers/reconciler.ts";
import { ScriptedRuntime } from "../helpers/scripted-runtime.ts";

const port = await freePort();

/** A fetch that records every request (URL and Last-Event-ID) and lets a test alter answers. */
function recordingFetch(alter?: (url: string, res: Response, n: number) => Response) {
  const calls: { url: string; lastEventId: string | null }[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const headers = new Headers(init?.headers);
    calls.push({ url, lastEventId: headers.get("last-event-id") });
    const res = await globalThis.fetch(input, init);
    return alter ? alter(url, res, calls.length) : res;
  };
  return { calls, fetch };
}

/** The body of `res` up to and including its first chunk that carries an event id, then a cut connection. */
function cutAfterFirstEvent(res: Response): Response {
  const body = res.body;
  if (!body) return res;
  const reader = body.getReader();
  let passed = false;
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (passed) {
          void reader.cancel().catch(() => undefined);
          controller.error(new TypeError("terminated"));
          return;
        }
        const { value, done } = await reader.read();
        if (done) return controller.close();
        if (new TextDecoder().decode(value).includes("id: ")) passed = true;
        controller.enqueue(value);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(stream, { status: res.status, headers: res.headers });
}

async function withRuntime(
  ctx: TestContext,
  fn: (runtime: ScriptedRuntime) => Promise<void>,
  runtime = new ScriptedRuntime(),
): Promise<void> {
  const r: Reconciler = makeReconciler(ctx, runtime);
  await r.start();
  try {
    await fn(runtime);
  } finally {
    await r.stop();
  }
}

forEachDatabase("SDK: waiting for a revision on the event stream", (suite) => {
  let base: string;
  before(async () => {
    await suite.ctx.app.listen({ port, host: "127.0.0.1" });
    base = `http://127.0.0.1:${port}`;
  });

  it("follows /v2/events and reads the revision only when its status changes, never on a timer", async () => {
    const ctx = suite.ctx;
    await withRuntime(ctx, async (runtime) => {
      const dep = await insertDeployment(ctx);
      runtime.on("slow", "build", { kind: "block" });
      const rev = await queueRevision(ctx, dep, { tag: "slow" });
      const { calls, fetch } = recordingFetch();
      const client = createSlipway({ baseUrl: base, apiKey: ctx.keys.admin, fetch });
      const statuses: string[] = [];
      const waiting = waitForRevision(client, dep, rev, {
        intervalMs: 20,
        onStatus: (s) => statuses.push(s),
      });
      await runtime.reached("slow", "build");
      // A poll every 20 ms would read the revision about 50 times while the build is held.
      await sleep(1000);
      runtime.release("slow", "build");
      const done = await waiting;
      assert.equal(done.status, "DEPLOYED");
      assert.deepEqual(
        statuses,
        done.status_history.map((h) => h.status),
      );
      const reads = calls.filter((c) => c.url.includes(`/revisions/${rev}`)).length;
      assert.ok(reads <= statuses.length + 1, `${reads} reads for ${statuses.length} statuses`);
      assert.equal(calls.filter((c) => c.url.includes("/v2/events")).length, 1);
    });
  });

  it("a read that lags the announced end (another server behind a load balancer) is read again", async () => {
    const ctx = suite.ctx;
    await withRuntime(ctx, async (runtime) => {
      const dep = await insertDeployment(ctx);
      runtime.on("lagging", "build", { kind: "block" });
      const rev = await queueRevision(ctx, dep, { tag: "lagging" });
      let staleServed = 0;
      // The first two reads that would show DEPLOYED show the status before it instead, as a server
      // whose read cache has not yet heard of the change would.
      const { calls, fetch } = recordingFetch((url, res) => {
        if (!url.includes(`/revisions/${rev}`) || staleServed >= 2) return res;
        const headers = new Headers(res.headers);
        headers.delete("content-length");
        const body = new ReadableStream<Uint8Array>({
          async start(controller) {
            let text = await res.text();
            const record = JSON.parse(text) as { status: string; status_history: { status: string }[] };
            if (record.status === "DEPLOYED") {
              staleServed++;
              record.status = "DEPLOYING";
              record.status_history = record.status_history.slice(0, -1);
              text = JSON.stringify(record);
            }
            controller.enqueue(new TextEncoder().encode(text));
            controller.close();
          },
        });
        return new Response(body, { status: res.status, headers });
      });
      const client = createSlipway({ baseUrl: base, apiKey: ctx.keys.admin, fetch });
      const waiting = waitForRevision(client, dep, rev, { signal: AbortSignal.timeout(30_000) });
      await runtime.reached("lagging", "build");
      const reads = () => calls.filter((c) => c.url.includes(`/revisions/${rev}`)).length;
      await until("the first read", async () => (reads() >= 1 ? true : undefined));
      runtime.release("lagging", "build");
      const done = await waiting;
      assert.equal(done.status, "DEPLOYED");
      assert.equal(staleServed, 2, "the lagging reads were served");
      assert.ok(reads() >= 3, `${reads()} reads`);
    });
  });

  it("a stream cut mid-way reopens with Last-Event-ID and misses no status", async () => {
    const ctx = suite.ctx;
    // The revision is queued with no reconciler running, so the wait subscribes while it is QUEUED.
    const dep = await insertDeployment(ctx);
    const rev = await queueRevision(ctx, dep, { tag: "cut" });
    let cut = false;
    const { calls, fetch } = recordingFetch((url, res) => {
      if (!url.includes("/v2/events") || cut) return res;
      cut = true;
      return cutAfterFirstEvent(res);
    });
    const opened = () => calls.filter((c) => c.url.includes("/v2/events"));
    const client = createSlipway({ baseUrl: base, apiKey: ctx.keys.admin, fetch });
    const statuses: string[] = [];
    const waiting = waitForRevision(client, dep, rev, { onStatus: (s) => statuses.push(s) });
    await until("the wait has read the revision", async () =>
      calls.some((c) => c.url.includes(`/revisions/${rev}`)) ? true : undefined,
    );
    // The build is held: its first status event reaches the first stream, which is then cut; the
    // statuses after it must come on the reopened one.
    const held = new ScriptedRuntime();
    held.on("cut", "build", { kind: "block" });
    await withRuntime(
      ctx,
      async (runtime) => {
        await runtime.reached("cut", "build");
        await until("the stream is reopened", async () => (opened().length === 2 ? true : undefined));
        runtime.release("cut", "build");
        const done = await waiting;
        assert.equal(done.status, "DEPLOYED");
        assert.deepEqual(
          statuses,
          done.status_history.map((h) => h.status),
        );
      },
      held,
    );
    assert.equal(opened().length, 2, "the cut stream was reopened once");
    assert.equal(opened()[0]?.lastEventId, null);
    assert.match(
      String(opened()[1]?.lastEventId),
      /^\d+$/,
      "the reconnect resumes after the last event seen",
    );
  });

  it("without an event stream (an older server) it polls", async () => {
    const ctx = suite.ctx;
    await withRuntime(ctx, async (runtime) => {
      const dep = await insertDeployment(ctx);
      runtime.on("old", "build", { kind: "block" });
      const rev = await queueRevision(ctx, dep, { tag: "old" });
      const { calls, fetch } = recordingFetch((url, res) =>
        url.includes("/v2/events") ? Response.json({ detail: "Not Found" }, { status: 404 }) : res,
      );
      const client = createSlipway({ baseUrl: base, apiKey: ctx.keys.admin, fetch });
      const statuses: string[] = [];
      const waiting = waitForRevision(client, dep, rev, {
        intervalMs: 20,
        onStatus: (s) => statuses.push(s),
      });
      await runtime.reached("old", "build");
      // While nothing changes, a poller keeps reading: ten reads of a held build say it polls.
      const reads = () => calls.filter((c) => c.url.includes(`/revisions/${rev}`)).length;
      await until("the wait polls", async () => (reads() >= 10 ? true : undefined));
      runtime.release("old", "build");
      const done = await waiting;
      assert.equal(done.status, "DEPLOYED");
      assert.deepEqual(
        statuses,
        done.status_history.map((h) => h.status),
      );
      assert.ok(reads() > statuses.length + 1, `polling read ${reads()} times`);
    });
  });

  it("an aborted wait rejects and closes its stream", async () => {
    const ctx = suite.ctx;
    await withRuntime(ctx, async (runtime) => {
      const dep = await insertDeployment(ctx);
      runtime.on("abort", "build", { kind: "block" });
      const rev = await queueRevision(ctx, dep, { tag: "abort" });
      const client = createSlipway({ baseUrl: base, apiKey: ctx.keys.admin });
      const stop = new AbortController();
      const waiting = waitForRevision(client, dep, rev, { signal: stop.signal });
      await runtime.reached("abort", "build");
      stop.abort(new Error("user gave up"));
      await assert.rejects(waiting, /user gave up/);
      runtime.release("abort", "build");
    });
  });
});
