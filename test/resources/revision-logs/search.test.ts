// Over 300 lines on purpose: one suite per database, whose cases share the fixture lines built once in `before`.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { before, describe, it } from "node:test";
import { sql } from "drizzle-orm";
import { RevisionLogSink } from "../../../src/reconciler/log-sink.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { insertDeployment, makeReconciler, queueRevision } from "../../helpers/reconciler.ts";
import { ScriptedRuntime } from "../../helpers/scripted-runtime.ts";
import { waitForRevision } from "../../helpers/wait.ts";

interface Entry {
  id: string;
  timestamp: number;
  level: string;
  message: string;
}
interface Page {
  logs: Entry[];
  next_offset: string | null;
}
type Stream = "build" | "deploy";

const T0 = Date.parse("2026-03-08T10:00:00.000Z");
const depUrl = (dep: string) => `/v1/projects/${dep}/deploy_logs`;
const revUrl = (dep: string, rev: string, stream: Stream = "deploy") =>
  `/v1/projects/${dep}/revisions/${rev}/${stream}_logs`;

/** Stored lines as the log sink leaves them, at chosen times (second `i` after T0 unless given). */
async function store(ctx: TestContext, rev: string, lines: [Stream, string, number?][]): Promise<void> {
  for (const [stream, line, at] of lines) {
    await ctx.db.orm.execute(
      sql`INSERT INTO revision_logs (revision_id, stream, at, line)
          VALUES (${rev}, ${stream}, ${new Date(at ?? T0).toISOString()}::timestamptz, ${line})`,
    );
  }
}

async function search(ctx: TestContext, url: string, payload?: unknown, key = ctx.keys.member) {
  return ctx.app.inject({
    method: "POST",
    url,
    headers: ctx.headers(key),
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });
}

async function page(ctx: TestContext, url: string, payload: unknown = {}): Promise<Page> {
  const res = await search(ctx, url, payload);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<Page>();
}

/** Every page of a search, following next_offset until it is null or a page is empty. */
async function all(ctx: TestContext, url: string, payload: Record<string, unknown>): Promise<Entry[]> {
  const out: Entry[] = [];
  let offset: string | null = null;
  for (let i = 0; i < 50; i++) {
    const p = await page(ctx, url, offset === null ? payload : { ...payload, offset });
    out.push(...p.logs);
    if (p.next_offset === null || p.logs.length === 0) return out;
    offset = p.next_offset;
  }
  throw new Error("paging did not end");
}

const messages = (entries: Entry[]) => entries.map((e) => e.message);

const BUILD: [Stream, string, number][] = [
  ["build", "$ npm ci", T0],
  ["build", "npm WARN deprecated left-pad@1.0.0", T0 + 1000],
  ["build", "npm ERR! code E404", T0 + 2000],
  ["build", "[debug] resolved 12 packages", T0 + 3000],
  ["build", "Build finished with 0 errors", T0 + 4000],
];
const DEPLOY1: [Stream, string, number][] = [
  ["deploy", "Listening on port 3000", T0 + 5000],
  ["deploy", "TypeError: Cannot read properties of undefined", T0 + 6000],
  ["deploy", "FATAL: out of memory", T0 + 7000],
  ["deploy", "GET /ok 100% done_x", T0 + 8000],
];
const DEPLOY2: [Stream, string, number][] = [
  ["deploy", "Slipway: DEPLOY_FAILED: the health check never answered", T0 + 9000],
  ["deploy", "warning: cache is cold", T0 + 10_000],
  ["deploy", "path C:\\tmp 100 percent", T0 + 11_000],
];

forEachDatabase("log search (POST /v1/projects/…/deploy_logs, build_logs)", (suite) => {
  let dep = "";
  let rev1 = "";
  let rev2 = "";
  let otherDep = "";
  let otherRev = "";
  let foreignDep = "";
  let foreignRev = "";

  before(async () => {
    const ctx = suite.ctx;
    dep = await insertDeployment(ctx);
    rev1 = await queueRevision(ctx, dep, { status: "DEPLOYED" });
    await store(ctx, rev1, [...BUILD, ...DEPLOY1]);
    rev2 = await queueRevision(ctx, dep, { status: "DEPLOYED" });
    await store(ctx, rev2, [["build", "rev2 build", T0 + 8500], ...DEPLOY2]);
    otherDep = await insertDeployment(ctx);
    otherRev = await queueRevision(ctx, otherDep, { status: "DEPLOYED" });
    await store(ctx, otherRev, [["deploy", "another deployment's line", T0 + 5500]]);
    foreignDep = await insertDeployment(ctx, {
      tenant: { orgId: ctx.other.orgId, workspaceId: ctx.other.workspaceId },
    });
    foreignRev = await queueRevision(ctx, foreignDep, { status: "DEPLOYED" });
    await store(ctx, foreignRev, [["deploy", "theirs", T0]]);
  });

  it("build_logs: a revision's build lines oldest first, as {id, timestamp (epoch ms), level, message}", async () => {
    const ctx = suite.ctx;
    const p = await page(ctx, revUrl(dep, rev1, "build"));
    assert.deepEqual(
      messages(p.logs),
      BUILD.map(([, line]) => line),
    );
    for (const [i, e] of p.logs.entries()) {
      assert.deepEqual(Object.keys(e).sort(), ["id", "level", "message", "timestamp"]);
      assert.equal(typeof e.id, "string");
      assert.equal(e.timestamp, BUILD[i]?.[2], "epoch milliseconds of the stored time");
    }
    const ids = p.logs.map((e) => BigInt(e.id));
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => (a < b ? -1 : 1)),
      "ids increase",
    );
    // Ascending: the cursor after the last line, so a follower polls from there without repeats.
    assert.equal(p.next_offset, p.logs.at(-1)?.id);
    const rest = await page(ctx, revUrl(dep, rev1, "build"), { offset: p.next_offset });
    assert.deepEqual(rest, { logs: [], next_offset: null });
  });

  it("derives a level per line: leading level word, then error words, then warning words, else INFO", async () => {
    const ctx = suite.ctx;
    const build = await page(ctx, revUrl(dep, rev1, "build"));
    assert.deepEqual(
      build.logs.map((e) => [e.message, e.level]),
      [
        ["$ npm ci", "INFO"],
        ["npm WARN deprecated left-pad@1.0.0", "WARNING"],
        ["npm ERR! code E404", "ERROR"],
        ["[debug] resolved 12 packages", "DEBUG"],
        ["Build finished with 0 errors", "INFO"],
      ],
    );
    const deploy = await page(ctx, depUrl(dep));
    assert.deepEqual(
      deploy.logs.map((e) => e.level),
      ["INFO", "ERROR", "CRITICAL", "INFO", "ERROR", "WARNING", "INFO"],
    );
  });

  it("level filters exactly, in either case; other filters combine with it", async () => {
    const ctx = suite.ctx;
    const upper = await page(ctx, depUrl(dep), { level: "ERROR" });
    assert.deepEqual(messages(upper.logs), [
      "TypeError: Cannot read properties of undefined",
      "Slipway: DEPLOY_FAILED: the health check never answered",
    ]);
    assert.deepEqual(await page(ctx, depUrl(dep), { level: "error" }), upper);
    assert.deepEqual(messages((await page(ctx, depUrl(dep), { level: "WARNING" })).logs), [
      "warning: cache is cold",
    ]);
    assert.deepEqual(messages((await page(ctx, depUrl(dep), { level: "ERROR", query: "typeerror" })).logs), [
      "TypeError: Cannot read properties of undefined",
    ]);
    assert.deepEqual((await page(ctx, depUrl(dep), { level: "DEBUG" })).logs, []);
  });

  it("query is a case-insensitive substring; LIKE wildcards and backslashes match themselves", async () => {
    const ctx = suite.ctx;
    const q = async (query: string) => messages((await page(ctx, depUrl(dep), { query })).logs);
    assert.deepEqual(await q("LISTENING"), ["Listening on port 3000"]);
    assert.deepEqual(await q("100%"), ["GET /ok 100% done_x"]);
    assert.deepEqual(await q("%"), ["GET /ok 100% done_x"]);
    assert.deepEqual(await q("_x"), ["GET /ok 100% done_x"]);
    assert.deepEqual(await q("_"), [
      "GET /ok 100% done_x",
      "Slipway: DEPLOY_FAILED: the health check never answered",
    ]);
    assert.deepEqual(await q("C:\\tmp"), ["path C:\\tmp 100 percent"]);
    assert.deepEqual(await q("\\"), ["path C:\\tmp 100 percent"]);
    assert.deepEqual(await q("no such text"), []);
    assert.equal((await q("")).length, DEPLOY1.length + DEPLOY2.length, "an empty query filters nothing");
    assert.equal(
      (await page(ctx, depUrl(dep), { query: null })).logs.length,
      DEPLOY1.length + DEPLOY2.length,
    );
  });

  it("deployment deploy_logs: every revision's deploy lines in stored order, no build lines, no other deployment", async () => {
    const ctx = suite.ctx;
    const p = await page(ctx, depUrl(dep));
    assert.deepEqual(
      messages(p.logs),
      [...DEPLOY1, ...DEPLOY2].map(([, line]) => line),
    );
    const rev = await page(ctx, revUrl(dep, rev2));
    assert.deepEqual(
      messages(rev.logs),
      DEPLOY2.map(([, line]) => line),
    );
    const other = await page(ctx, depUrl(otherDep));
    assert.deepEqual(messages(other.logs), ["another deployment's line"]);
    const noLines = await insertDeployment(ctx);
    assert.deepEqual(await page(ctx, depUrl(noLines)), { logs: [], next_offset: null });
  });

  it("order desc pages newest first; next_offset continues and is null at the oldest line", async () => {
    const ctx = suite.ctx;
    const first = await page(ctx, depUrl(dep), { order: "desc", limit: 3 });
    assert.deepEqual(messages(first.logs), [
      "path C:\\tmp 100 percent",
      "warning: cache is cold",
      "Slipway: DEPLOY_FAILED: the health check never answered",
    ]);
    assert.equal(first.next_offset, first.logs.at(-1)?.id);
    const everything = await all(ctx, depUrl(dep), { order: "desc", limit: 3 });
    assert.deepEqual(messages(everything), [...DEPLOY1, ...DEPLOY2].map(([, line]) => line).reverse());
    const last = await page(ctx, depUrl(dep), { order: "desc", limit: 7 });
    assert.equal(last.logs.length, 7);
    assert.equal(last.next_offset, null, "nothing older remains");
    // Integer and string cursors are the same cursor.
    const asNumber = await page(ctx, depUrl(dep), {
      order: "desc",
      limit: 3,
      offset: Number(first.next_offset),
    });
    const asString = await page(ctx, depUrl(dep), { order: "desc", limit: 3, offset: first.next_offset });
    assert.deepEqual(asNumber, asString);
    assert.deepEqual(
      await page(ctx, depUrl(dep), { order: "desc", limit: 3, offset: 0 }),
      first,
      "0 is the start",
    );
  });

  it("order asc pages oldest first across pages without gaps or repeats, and a later line follows the cursor", async () => {
    const ctx = suite.ctx;
    const d = await insertDeployment(ctx);
    const r = await queueRevision(ctx, d, { status: "BUILDING" });
    await store(ctx, r, [
      ["build", "one", T0],
      ["build", "two", T0],
      ["build", "three", T0],
    ]);
    const paged = await all(ctx, revUrl(d, r, "build"), { order: "asc", limit: 2 });
    assert.deepEqual(messages(paged), ["one", "two", "three"]);
    const p = await page(ctx, revUrl(d, r, "build"), { order: "asc", limit: 50 });
    await store(ctx, r, [["build", "four", T0 + 1]]);
    const next = await page(ctx, revUrl(d, r, "build"), { order: "asc", limit: 50, offset: p.next_offset });
    assert.deepEqual(messages(next.logs), ["four"]);
  });

  it("limit defaults to 100 and may be up to 1000", async () => {
    const ctx = suite.ctx;
    const d = await insertDeployment(ctx);
    const r = await queueRevision(ctx, d, { status: "DEPLOYED" });
    await ctx.db.orm.execute(
      sql`INSERT INTO revision_logs (revision_id, stream, at, line)
          SELECT ${r}, 'deploy', now(), 'line ' || g FROM generate_series(1, 1005) g`,
    );
    const byDefault = await page(ctx, depUrl(d), { order: "desc" });
    assert.equal(byDefault.logs.length, 100);
    assert.equal(byDefault.logs[0]?.message, "line 1005");
    assert.notEqual(byDefault.next_offset, null);
    const max = await page(ctx, depUrl(d), { order: "desc", limit: 1000 });
    assert.equal(max.logs.length, 1000);
    const rest = await page(ctx, depUrl(d), { order: "desc", limit: 1000, offset: max.next_offset });
    assert.deepEqual(messages(rest.logs), ["line 5", "line 4", "line 3", "line 2", "line 1"]);
    assert.equal(rest.next_offset, null);
  });

  it("start_time and end_time bound the timestamp inclusively, as epoch ms or RFC 3339", async () => {
    const ctx = suite.ctx;
    const between = async (body: Record<string, unknown>) =>
      messages((await page(ctx, depUrl(dep), body)).logs);
    const expected = [
      "TypeError: Cannot read properties of undefined",
      "FATAL: out of memory",
      "GET /ok 100% done_x",
    ];
    assert.deepEqual(await between({ start_time: T0 + 6000, end_time: T0 + 8000 }), expected);
    assert.deepEqual(
      await between({
        start_time: new Date(T0 + 6000).toISOString(),
        end_time: "2026-03-08T12:00:08+02:00",
      }),
      expected,
    );
    // What Python's datetime.isoformat() sends (the hosted CLI's follow mode).
    assert.deepEqual(await between({ start_time: "2026-03-08T10:00:10.000000+00:00" }), [
      "warning: cache is cold",
      "path C:\\tmp 100 percent",
    ]);
    assert.deepEqual(await between({ end_time: T0 + 5000 }), ["Listening on port 3000"]);
    assert.deepEqual(await between({ start_time: T0 + 5000, end_time: T0 + 5000 }), [
      "Listening on port 3000",
    ]);
    assert.deepEqual(await between({ start_time: null, end_time: null }).then((l) => l.length), 7);
  });

  it("an absent body searches with the defaults", async () => {
    const ctx = suite.ctx;
    const res = await search(ctx, revUrl(dep, rev1, "build"));
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), await page(ctx, revUrl(dep, rev1, "build"), {}));
  });

  it("rejects bad bodies and paths with 422 naming the field", async () => {
    const ctx = suite.ctx;
    const cases: [unknown, (string | number)[]][] = [
      [{ order: "up" }, ["body", "order"]],
      [{ order: null }, ["body", "order"]],
      [{ limit: 0 }, ["body", "limit"]],
      [{ limit: 1001 }, ["body", "limit"]],
      [{ limit: "10" }, ["body", "limit"]],
      [{ limit: 2.5 }, ["body", "limit"]],
      [{ offset: -1 }, ["body", "offset"]],
      [{ offset: "-1" }, ["body", "offset"]],
      [{ offset: "abc" }, ["body", "offset"]],
      [{ offset: 1.5 }, ["body", "offset"]],
      [{ level: "verbose" }, ["body", "level"]],
      [{ level: 3 }, ["body", "level"]],
      [{ query: 5 }, ["body", "query"]],
      [{ query: "x".repeat(1001) }, ["body", "query"]],
      [{ start_time: "yesterday" }, ["body", "start_time"]],
      [{ start_time: "2026-03-08T00:00:00" }, ["body", "start_time"]],
      [{ start_time: -5 }, ["body", "start_time"]],
      [{ end_time: true }, ["body", "end_time"]],
      [{ start_time: T0 + 1, end_time: T0 }, ["body", "end_time"]],
      [["not", "an", "object"], ["body"]],
    ];
    for (const [payload, loc] of cases) {
      for (const url of [depUrl(dep), revUrl(dep, rev1), revUrl(dep, rev1, "build")]) {
        const res = await search(ctx, url, payload);
        assert.equal(res.statusCode, 422, `${JSON.stringify(payload)} at ${url}: ${res.body}`);
        const detail = res.json<{ detail: { loc: unknown[]; msg: string }[] }>().detail;
        assert.ok(
          detail.some((d) => JSON.stringify(d.loc) === JSON.stringify(loc)),
          `${JSON.stringify(payload)} → ${res.body}`,
        );
      }
    }
    for (const url of [
      "/v1/projects/not-a-uuid/deploy_logs",
      `/v1/projects/${dep}/revisions/not-a-uuid/build_logs`,
      `/v1/projects/not-a-uuid/revisions/${rev1}/deploy_logs`,
    ]) {
      const res = await search(ctx, url, {});
      assert.equal(res.statusCode, 422, `${url}: ${res.body}`);
      assert.equal(res.json<{ detail: { loc: string[] }[] }>().detail[0]?.loc[0], "path");
    }
    const broken = await ctx.app.inject({
      method: "POST",
      url: depUrl(dep),
      headers: ctx.headers(ctx.keys.member, { "content-type": "application/json" }),
      payload: "{not json",
    });
    assert.equal(broken.statusCode, 400, broken.body);
  });

  it("404 for an unknown deployment or revision, a revision of another deployment, and another workspace", async () => {
    const ctx = suite.ctx;
    const inWs2 = await insertDeployment(ctx, {
      tenant: { orgId: ctx.orgId, workspaceId: ctx.workspace2Id },
    });
    const ws2Rev = await queueRevision(ctx, inWs2, { status: "DEPLOYED" });
    await store(ctx, ws2Rev, [["deploy", "second workspace", T0]]);
    const urls = [
      depUrl(randomUUID()),
      revUrl(dep, randomUUID()),
      revUrl(dep, randomUUID(), "build"),
      revUrl(dep, otherRev),
      revUrl(otherDep, rev1, "build"),
      revUrl(randomUUID(), rev1),
      depUrl(inWs2),
      revUrl(inWs2, ws2Rev),
      depUrl(foreignDep),
      revUrl(foreignDep, foreignRev, "build"),
    ];
    for (const u of urls) {
      const res = await search(ctx, u, {}, ctx.keys.admin);
      assert.equal(res.statusCode, 404, `${u}: ${res.body}`);
      assert.equal(typeof res.json<{ detail: string }>().detail, "string");
      assert.doesNotMatch(res.body, /second workspace|theirs/);
    }
    // The workspace's own key reads them.
    const own = await search(ctx, depUrl(inWs2), {}, ctx.keys.boundMember);
    assert.equal(own.statusCode, 200, own.body);
    assert.deepEqual(messages(own.json<Page>().logs), ["second workspace"]);
    const viaTenant = await ctx.app.inject({
      method: "POST",
      url: revUrl(inWs2, ws2Rev),
      headers: ctx.headers(ctx.keys.viewer, { "x-tenant-id": ctx.workspace2Id }),
      payload: {},
    });
    assert.equal(viaTenant.statusCode, 200, viaTenant.body);
  });

  it("viewers may search (these POSTs only read)", async () => {
    const ctx = suite.ctx;
    for (const url of [depUrl(dep), revUrl(dep, rev1), revUrl(dep, rev1, "build")]) {
      const res = await search(ctx, url, { limit: 1 }, ctx.keys.viewer);
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
      assert.equal(res.json<Page>().logs.length, 1);
    }
  });

  it("secret values never appear: the reconciler stores them redacted, and a query for one finds nothing", async () => {
    const ctx = suite.ctx;
    const secret = "s3cr3t/value with&spaces";
    const d = await insertDeployment(ctx, { name: `redact-${ctx.kind}` });
    const r = await queueRevision(ctx, d, { secrets: { API_TOKEN: secret } });
    const reconciler = makeReconciler(ctx, new ScriptedRuntime());
    await reconciler.start();
    try {
      assert.equal(await waitForRevision(ctx.db, r, { timeoutMs: 60_000 }), "DEPLOYED");
    } finally {
      await reconciler.stop();
    }
    // A running app printing the secret (and its URL-encoded form) later, through the same sink kind.
    const sink = new RevisionLogSink(ctx.db, r, [secret]);
    sink.log("deploy", `connecting with ${secret}`);
    sink.log("deploy", `url=https://x/?t=${encodeURIComponent(secret)}`);
    await sink.close();
    const build = await search(ctx, revUrl(d, r, "build"), { limit: 1000 });
    assert.equal(build.statusCode, 200, build.body);
    assert.ok(messages(build.json<Page>().logs).includes("env API_TOKEN=[redacted]"), build.body);
    for (const url of [revUrl(d, r, "build"), revUrl(d, r), depUrl(d)]) {
      const res = await search(ctx, url, { limit: 1000 });
      assert.equal(res.statusCode, 200, res.body);
      assert.ok(!res.body.includes("s3cr3t"), `${url} leaks the secret: ${res.body}`);
      assert.ok(!res.body.includes(encodeURIComponent(secret)));
      for (const query of [secret, "s3cr3t", encodeURIComponent(secret)]) {
        assert.deepEqual((await page(ctx, url, { query })).logs, [], `query ${query} at ${url}`);
      }
    }
    assert.deepEqual(messages((await page(ctx, revUrl(d, r), { query: "connecting" })).logs), [
      "connecting with [redacted]",
    ]);
  });

  for (const [name, url, otherUrl] of [
    ["deployment deploy_logs", () => depUrl(dep), () => depUrl(foreignDep)],
    ["revision deploy_logs", () => revUrl(dep, rev1), () => revUrl(foreignDep, foreignRev)],
    ["revision build_logs", () => revUrl(dep, rev1, "build"), () => revUrl(foreignDep, foreignRev, "build")],
  ] as const) {
    describe(name, () => {
      authMatrix(suite, {
        method: "POST",
        url,
        payload: () => ({}),
        write: false,
        workspace: true,
        otherTenantUrl: otherUrl,
      });
    });
  }
});
