import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { before, it } from "node:test";
import { sql } from "drizzle-orm";
import { RevisionLogSink } from "../../src/reconciler/log-sink.ts";
import { authMatrix } from "../helpers/auth-matrix.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { insertDeployment, logLines, queueRevision } from "../helpers/reconciler.ts";

interface Line {
  at: string;
  line: string;
  stream: string;
}

const url = (dep: string, rev: string, query = "") => `/v2/deployments/${dep}/revisions/${rev}/logs${query}`;

async function revisionWithLogs(
  ctx: TestContext,
  lines: ["build" | "deploy", string][],
  status = "BUILDING",
) {
  const dep = await insertDeployment(ctx);
  const rev = await queueRevision(ctx, dep, { status });
  const sink = new RevisionLogSink(ctx.db, rev, []);
  for (const [stream, line] of lines) sink.log(stream, line);
  await sink.flush();
  return { dep, rev, sink };
}

async function setStatus(ctx: TestContext, rev: string, status: string) {
  await ctx.db.orm.execute(sql`UPDATE revisions SET status = ${status} WHERE id = ${rev}`);
  await ctx.db.notify("slipway_logs", rev);
}

forEachDatabase("revision logs", (suite) => {
  let fixture: { dep: string; rev: string };
  let foreign: { dep: string; rev: string };

  before(async () => {
    const ctx = suite.ctx;
    fixture = await revisionWithLogs(ctx, [
      ["build", "installing"],
      ["build", "built"],
      ["deploy", "listening on 1234"],
    ]);
    const dep = await insertDeployment(ctx, {
      tenant: { orgId: ctx.other.orgId, workspaceId: ctx.other.workspaceId },
    });
    foreign = { dep, rev: await queueRevision(ctx, dep) };
  });

  authMatrix(suite, {
    method: "GET",
    url: () => url(fixture.dep, fixture.rev),
    workspace: true,
    otherTenantUrl: () => url(foreign.dep, foreign.rev),
  });

  it("lists stored lines oldest first with time and stream; filters by type", async () => {
    const ctx = suite.ctx;
    const res = await ctx.app.inject({
      method: "GET",
      url: url(fixture.dep, fixture.rev),
      headers: ctx.headers(ctx.keys.viewer),
    });
    assert.equal(res.statusCode, 200, res.body);
    const all = res.json<Line[]>();
    assert.deepEqual(
      all.map((l) => [l.stream, l.line]),
      [
        ["build", "installing"],
        ["build", "built"],
        ["deploy", "listening on 1234"],
      ],
    );
    for (const l of all) assert.ok(!Number.isNaN(Date.parse(l.at)));
    const build = await ctx.app.inject({
      method: "GET",
      url: url(fixture.dep, fixture.rev, "?type=build"),
      headers: ctx.headers(ctx.keys.viewer),
    });
    assert.deepEqual(
      build.json<Line[]>().map((l) => l.line),
      ["installing", "built"],
    );
    const deploy = await ctx.app.inject({
      method: "GET",
      url: url(fixture.dep, fixture.rev, "?type=deploy"),
      headers: ctx.headers(ctx.keys.viewer),
    });
    assert.deepEqual(
      deploy.json<Line[]>().map((l) => l.line),
      ["listening on 1234"],
    );
  });

  it("pages with limit/offset and filters with since", async () => {
    const ctx = suite.ctx;
    const page = await ctx.app.inject({
      method: "GET",
      url: url(fixture.dep, fixture.rev, "?limit=1&offset=1"),
      headers: ctx.headers(ctx.keys.member),
    });
    assert.deepEqual(
      page.json<Line[]>().map((l) => l.line),
      ["built"],
    );
    const all = (
      await ctx.app.inject({
        method: "GET",
        url: url(fixture.dep, fixture.rev),
        headers: ctx.headers(ctx.keys.member),
      })
    ).json<Line[]>();
    const first = all[0];
    assert.ok(first);
    const since = await ctx.app.inject({
      method: "GET",
      url: url(fixture.dep, fixture.rev, `?since=${encodeURIComponent(first.at)}`),
      headers: ctx.headers(ctx.keys.member),
    });
    assert.ok(since.json<Line[]>().every((l) => Date.parse(l.at) > Date.parse(first.at)));
    const future = await ctx.app.inject({
      method: "GET",
      url: url(fixture.dep, fixture.rev, "?since=2999-01-01T00:00:00Z"),
      headers: ctx.headers(ctx.keys.member),
    });
    assert.deepEqual(future.json(), []);
  });

  it("rejects bad query and path values with 422 naming the field", async () => {
    const ctx = suite.ctx;
    const cases: [string, string][] = [
      ["?type=runtime", "type"],
      ["?limit=0", "limit"],
      ["?limit=5001", "limit"],
      ["?offset=-1", "offset"],
      ["?since=yesterday", "since"],
    ];
    for (const [query, field] of cases) {
      const res = await ctx.app.inject({
        method: "GET",
        url: url(fixture.dep, fixture.rev, query),
        headers: ctx.headers(ctx.keys.member),
      });
      assert.equal(res.statusCode, 422, `${query}: ${res.body}`);
      const detail = res.json<{ detail: { loc: string[] }[] }>().detail;
      assert.deepEqual(detail[0]?.loc, ["query", field]);
    }
    const badPath = await ctx.app.inject({
      method: "GET",
      url: `/v2/deployments/not-a-uuid/revisions/${fixture.rev}/logs`,
      headers: ctx.headers(ctx.keys.member),
    });
    assert.equal(badPath.statusCode, 422);
  });

  it("404 for an unknown revision, a revision of another deployment, and another workspace", async () => {
    const ctx = suite.ctx;
    const otherDep = await insertDeployment(ctx);
    const inWs2 = await insertDeployment(ctx, {
      tenant: { orgId: ctx.orgId, workspaceId: ctx.workspace2Id },
    });
    const ws2Rev = await queueRevision(ctx, inWs2);
    const urls = [url(fixture.dep, crypto.randomUUID()), url(otherDep, fixture.rev), url(inWs2, ws2Rev)];
    for (const u of urls) {
      const res = await ctx.app.inject({ method: "GET", url: u, headers: ctx.headers(ctx.keys.admin) });
      assert.equal(res.statusCode, 404, `${u}: ${res.body}`);
      assert.equal(typeof res.json<{ detail: string }>().detail, "string");
    }
    // The workspace's own key sees it.
    const own = await ctx.app.inject({
      method: "GET",
      url: url(inWs2, ws2Rev),
      headers: ctx.headers(ctx.keys.boundMember),
    });
    assert.equal(own.statusCode, 200);
  });

  it("keeps only the newest lines per revision and stream, and redacts secrets", async () => {
    const ctx = suite.ctx;
    const dep = await insertDeployment(ctx);
    const rev = await queueRevision(ctx, dep);
    const sink = new RevisionLogSink(ctx.db, rev, ["hunter2-pass", "a b&c"], 10);
    sink.log("deploy", "deploy line survives");
    for (let i = 0; i < 25; i++)
      sink.log("build", `line ${i} pw=hunter2-pass enc=${encodeURIComponent("a b&c")}`);
    await sink.flush();
    const build = await logLines(ctx, rev, "build");
    assert.equal(build.length, 10);
    assert.equal(build[0], "line 15 pw=[redacted] enc=[redacted]");
    assert.equal(build[9], "line 24 pw=[redacted] enc=[redacted]");
    assert.deepEqual(await logLines(ctx, rev, "deploy"), ["deploy line survives"]);
  });

  it("stores a line the runtime cut at 64 KiB whole, marker included, and cuts a longer one itself", async () => {
    const ctx = suite.ctx;
    const cut = `${"x".repeat(64 * 1024)} … [cut: 10420224 bytes]`;
    const { rev } = await revisionWithLogs(ctx, [
      ["build", cut],
      ["build", "z".repeat(1024 * 1024)],
    ]);
    const [first, second] = await logLines(ctx, rev, "build");
    assert.equal(first, cut);
    assert.equal(second, `${"z".repeat(65 * 1024)} … [cut: ${1024 * 1024 - 65 * 1024} bytes]`);
  });

  it("text/event-stream on the build log follows until the revision is terminal", async () => {
    const ctx = suite.ctx;
    const { dep, rev, sink } = await revisionWithLogs(ctx, [["build", "step 1"]]);
    const pending = ctx.app.inject({
      method: "GET",
      url: url(dep, rev, "?type=build"),
      headers: ctx.headers(ctx.keys.viewer, { accept: "text/event-stream" }),
    });
    await new Promise((r) => setTimeout(r, 150));
    sink.log("build", "step 2");
    sink.log("deploy", "not in the build stream");
    await sink.flush();
    await new Promise((r) => setTimeout(r, 150));
    sink.log("build", "step 3");
    await sink.flush();
    await setStatus(ctx, rev, "BUILD_FAILED");
    const res = await pending;
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /^text\/event-stream/);
    const data = res.body
      .split("\n")
      .filter((l) => l.startsWith("data: "))
      .map((l) => JSON.parse(l.slice(6)) as Line & { status?: string });
    assert.deepEqual(
      data.map((d) => d.line ?? d.status),
      ["step 1", "step 2", "step 3", "BUILD_FAILED"],
    );
    assert.match(res.body, /event: end/);
    // Resuming after the first event sends the rest only.
    const firstId = /id: (\d+)/.exec(res.body)?.[1];
    const resumed = await ctx.app.inject({
      method: "GET",
      url: url(dep, rev, "?type=build"),
      headers: ctx.headers(ctx.keys.viewer, {
        accept: "text/event-stream",
        "last-event-id": String(firstId),
      }),
    });
    assert.doesNotMatch(resumed.body, /step 1/);
    assert.match(resumed.body, /step 2/);
  });

  it("text/event-stream on the deploy log follows live until the client leaves", async () => {
    const ctx = suite.ctx;
    const { dep, rev, sink } = await revisionWithLogs(ctx, [["deploy", "started"]], "DEPLOYED");
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    const address = ctx.app.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const received: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        {
          host: "127.0.0.1",
          port,
          path: url(dep, rev, "?type=deploy"),
          headers: { "x-api-key": ctx.keys.viewer, accept: "text/event-stream" },
        },
        (res) => {
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            for (const l of chunk.split("\n")) {
              if (l.startsWith("data: ")) received.push((JSON.parse(l.slice(6)) as Line).line);
            }
            if (received.length === 1) {
              sink.log("deploy", "request served");
              void sink.flush();
            }
            if (received.length === 2) {
              req.destroy();
              resolve();
            }
          });
          res.on("error", () => {});
        },
      );
      req.on("error", (err) => {
        if (received.length < 2) reject(err);
      });
      req.end();
    });
    assert.deepEqual(received, ["started", "request served"]);
  });
});
