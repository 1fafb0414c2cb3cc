import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { createTestContext, forEachDatabase, type TestContext } from "../helpers/harness.ts";

const json = { "content-type": "application/json" };

forEachDatabase("HTTP conventions", (suite) => {
  it("a body over 1 MiB is 413 with a detail", async () => {
    const { app, keys, headers } = suite.ctx;
    const res = await app.inject({
      method: "POST",
      url: "/v1/workspaces",
      headers: { ...headers(keys.admin), ...json },
      payload: JSON.stringify({ name: "x", pad: "a".repeat(1024 * 1024) }),
    });
    assert.equal(res.statusCode, 413);
    assert.equal(typeof res.json().detail, "string");
  });

  it("a body that is not JSON is 415, and broken JSON is 400, each with a detail", async () => {
    const { app, keys, headers } = suite.ctx;
    const text = await app.inject({
      method: "POST",
      url: "/v1/workspaces",
      headers: { ...headers(keys.admin), "content-type": "text/plain" },
      payload: "name=x",
    });
    assert.equal(text.statusCode, 415);
    assert.match(text.json().detail, /Content-Type/);
    const broken = await app.inject({
      method: "POST",
      url: "/v1/workspaces",
      headers: { ...headers(keys.admin), ...json },
      payload: '{"name": ',
    });
    assert.equal(broken.statusCode, 400);
    assert.match(broken.json().detail, /JSON/);
  });

  it("an empty body with Content-Type: application/json counts as no body", async () => {
    const { app, keys, headers } = suite.ctx;
    const created = await app.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { ...headers(keys.admin), ...json },
      payload: { role: "viewer" },
    });
    const res = await app.inject({
      method: "DELETE",
      url: `/v1/api-keys/${created.json().id}`,
      headers: { ...headers(keys.admin), ...json },
    });
    assert.equal(res.statusCode, 200, res.body);
    // A route that needs a body still says so, as a 422 on the body.
    const missing = await app.inject({
      method: "POST",
      url: "/v1/workspaces",
      headers: { ...headers(keys.admin), ...json },
    });
    assert.equal(missing.statusCode, 422, missing.body);
  });

  it("unknown JSON fields are ignored, not stored", async () => {
    const { app, keys, headers } = suite.ctx;
    const res = await app.inject({
      method: "POST",
      url: "/v1/workspaces",
      headers: { ...headers(keys.admin), ...json },
      payload: { name: "extra-fields", colour: "blue" },
    });
    assert.equal(res.statusCode, 201);
    assert.equal("colour" in res.json(), false);
  });

  it("a malformed path UUID is 422 naming the path parameter", async () => {
    const { app, keys, headers } = suite.ctx;
    const res = await app.inject({
      method: "DELETE",
      url: "/v1/api-keys/not-a-uuid",
      headers: headers(keys.admin),
    });
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json().detail[0].loc, ["path", "id"]);
  });

  it("validation errors list each field with loc, msg and type", async () => {
    const { app, keys, headers } = suite.ctx;
    const res = await app.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { ...headers(keys.admin), ...json },
      payload: { role: 7, description: 9 },
    });
    assert.equal(res.statusCode, 422);
    const locs = res.json().detail.map((d: { loc: string[] }) => d.loc.join("."));
    assert.ok(locs.includes("body.role"), locs.join(","));
    assert.ok(locs.includes("body.description"), locs.join(","));
    for (const d of res.json().detail) {
      assert.equal(typeof d.msg, "string");
      assert.equal(typeof d.type, "string");
    }
  });

  it("echoes a caller's X-Request-Id and makes one otherwise", async () => {
    const { app } = suite.ctx;
    const given = await app.inject({
      method: "GET",
      url: "/ok",
      headers: { "x-request-id": "trace-abc.123" },
    });
    assert.equal(given.headers["x-request-id"], "trace-abc.123");
    const unsafe = await app.inject({ method: "GET", url: "/ok", headers: { "x-request-id": "bad id\n" } });
    assert.match(String(unsafe.headers["x-request-id"]), /^[0-9a-f-]{36}$/);
  });

  it("an unknown route is a JSON 404", async () => {
    const res = await suite.ctx.app.inject({ method: "GET", url: "/v9/nothing" });
    assert.equal(res.statusCode, 404);
    assert.equal(typeof res.json().detail, "string");
  });

  it("request ids are in the log lines, and API keys never are", async () => {
    const { app, keys, headers, readLogs } = suite.ctx;
    await app.inject({
      method: "GET",
      url: "/v1/workspaces",
      headers: headers(keys.admin, { "x-request-id": "find-me-1" }),
    });
    await app.inject({
      method: "GET",
      url: "/v1/workspaces",
      headers: { authorization: `Bearer ${keys.member}` },
    });
    const logs = readLogs();
    assert.match(logs, /"request_id":"find-me-1"/);
    for (const key of Object.values(keys)) assert.ok(!logs.includes(key), "an API key was logged");
  });

  it("/metrics counts requests by route and status, and reports the pool", async () => {
    const { app } = suite.ctx;
    await app.inject({ method: "GET", url: "/ok" });
    const res = await app.inject({ method: "GET", url: "/metrics" });
    assert.equal(res.statusCode, 200);
    assert.match(res.headers["content-type"] as string, /text\/plain/);
    assert.match(res.body, /slipway_http_requests_total\{method="GET",route="\/ok",status_code="200"\} \d+/);
    assert.match(res.body, /slipway_http_request_duration_seconds_bucket\{/);
    assert.match(res.body, /slipway_db_pool_connections\{state="total"\} \d+/);
  });

  it("/openapi.json is valid OpenAPI 3.1 with security schemes and error responses", async () => {
    const { app } = suite.ctx;
    const res = await app.inject({ method: "GET", url: "/openapi.json" });
    assert.equal(res.statusCode, 200);
    const doc = res.json();
    assert.equal(doc.openapi, "3.1.0");
    const validator = new Validator();
    const result = await validator.validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.ok(doc.components.securitySchemes.ApiKey);
    for (const [path, ops] of Object.entries(
      doc.paths as Record<string, Record<string, { responses: object; security?: unknown[] }>>,
    )) {
      for (const [method, op] of Object.entries(ops)) {
        const codes = Object.keys(op.responses);
        assert.ok(codes.includes("422") && codes.includes("500"), `${method} ${path} documents errors`);
        // Public routes: health, the OAuth browser landings (callback GET, setup) and signed uploads.
        const isPublic =
          path === "/ok" ||
          (method === "get" && path.startsWith("/v2/auth/callback")) ||
          path.startsWith("/v2/auth/setup") ||
          path.startsWith("/v2/uploads");
        if (!isPublic) {
          assert.ok(codes.includes("401"), `${method} ${path} documents 401`);
        }
      }
    }
    const docs = await app.inject({ method: "GET", url: "/docs/" });
    assert.equal(docs.statusCode, 200);
  });

  it("/ok is 503 when the database is unreachable", async () => {
    const ctx = await createTestContext(suite.ctx.kind);
    try {
      await ctx.db.close();
      const res = await ctx.app.inject({ method: "GET", url: "/ok" });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().detail, "Database is unreachable.");
    } finally {
      // Closes the app and drops the test's database (closing the connections again is a no-op).
      await ctx.close();
    }
  });
});

describe("base path", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext("pglite", { env: { SLIPWAY_BASE_PATH: "/api/slipway" } });
  });
  after(async () => ctx.close());

  it("mounts every route under the prefix and documents paths relative to it", async () => {
    assert.equal((await ctx.app.inject({ method: "GET", url: "/api/slipway/ok" })).statusCode, 200);
    assert.equal((await ctx.app.inject({ method: "GET", url: "/ok" })).statusCode, 404);
    const list = await ctx.app.inject({
      method: "GET",
      url: "/api/slipway/v1/workspaces",
      headers: ctx.headers(ctx.keys.viewer),
    });
    assert.equal(list.statusCode, 200);
    const doc = (await ctx.app.inject({ method: "GET", url: "/api/slipway/openapi.json" })).json();
    assert.equal(doc.servers[0].url, "/api/slipway");
    assert.ok(doc.paths["/v1/workspaces"]);
  });
});

describe("rate limit", () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext("pglite", { env: { SLIPWAY_RATE_LIMIT_PER_MINUTE: "5" } });
  });
  after(async () => ctx.close());

  it("counts requests per API key and answers 429 with Retry-After past the limit", async () => {
    const call = (key: string) =>
      ctx.app.inject({ method: "GET", url: "/v1/workspaces", headers: ctx.headers(key) });
    for (let i = 0; i < 5; i++) {
      const res = await call(ctx.keys.viewer);
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers["x-ratelimit-limit"], "5");
      assert.equal(res.headers["x-ratelimit-remaining"], String(4 - i));
    }
    const limited = await call(ctx.keys.viewer);
    assert.equal(limited.statusCode, 429);
    assert.match(limited.json().detail, /Rate limit of 5 requests a minute/);
    const retry = Number(limited.headers["retry-after"]);
    assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
    // Another key has its own window; routes without a key are not counted.
    assert.equal((await call(ctx.keys.member)).statusCode, 200);
    for (let i = 0; i < 7; i++)
      assert.equal((await ctx.app.inject({ method: "GET", url: "/ok" })).statusCode, 200);
  });
});
