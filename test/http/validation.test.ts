import assert from "node:assert/strict";
import { it } from "node:test";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";

const json = { "content-type": "application/json" };

interface Item {
  loc: (string | number)[];
  msg: string;
  type: string;
}

function expect422(res: { statusCode: number; body: string }, loc: (string | number)[], msg?: RegExp): void {
  assert.equal(res.statusCode, 422, res.body);
  const items = (JSON.parse(res.body) as { detail: Item[] }).detail;
  const item = items.find((i) => JSON.stringify(i.loc) === JSON.stringify(loc));
  assert.ok(item, `no item at ${JSON.stringify(loc)}: ${res.body}`);
  if (msg) assert.match(item.msg, msg);
}

async function workspaceCount(ctx: TestContext): Promise<number> {
  const res = await ctx.app.inject({
    method: "GET",
    url: "/v1/workspaces",
    headers: ctx.headers(ctx.keys.admin),
  });
  return (res.json() as unknown[]).length;
}

forEachDatabase("bad input is a 422 naming the field", (suite) => {
  const get = (url: string) =>
    suite.ctx.app.inject({ method: "GET", url, headers: suite.ctx.headers(suite.ctx.keys.admin) });
  const post = (url: string, payload: string) =>
    suite.ctx.app.inject({
      method: "POST",
      url,
      headers: { ...suite.ctx.headers(suite.ctx.keys.admin), ...json },
      payload,
    });

  it("a NUL byte in a JSON string, at any depth or in a key, changes nothing", async () => {
    const before = await workspaceCount(suite.ctx);
    expect422(await post("/v1/workspaces", '{"name":"a\\u0000b"}'), ["body", "name"], /NUL/);
    expect422(
      await post(
        "/v2/deployments",
        JSON.stringify({
          name: "nul-app",
          source: "internal_template",
          source_revision_config: { repo_ref: "hello-http", framework_config_path: "x\u0000" },
        }),
      ),
      ["body", "source_revision_config", "framework_config_path"],
      /NUL/,
    );
    expect422(
      await post(
        "/v2/deployments",
        JSON.stringify({ name: "nul-app", secrets: [{ name: "A", value: "\u0000" }] }),
      ),
      ["body", "secrets", 0, "value"],
    );
    expect422(await post("/v1/workspaces", '{"name":"ok","x\\u0000":1}'), ["body", "x\\u0000"], /key/);
    assert.equal(await workspaceCount(suite.ctx), before);
  });

  it("a NUL byte in a query value or a path parameter is a 422 naming it", async () => {
    expect422(await get("/v2/deployments?name_contains=a%00b"), ["query", "name_contains"], /NUL/);
    expect422(await get("/v2/auth/tokens?user_id=%00"), ["query", "user_id"], /NUL/);
    expect422(await get("/v2/auth/providers/gh%00"), ["path", "provider_id"], /NUL/);
    // Also on a route whose schema does not list the parameter.
    expect422(await get("/v1/workspaces?anything=%00"), ["query", "anything"], /NUL/);
  });

  it("text that is not valid Unicode (a lone surrogate) is a 422", async () => {
    expect422(await post("/v1/workspaces", '{"name":"a\\ud800"}'), ["body", "name"], /Unicode/);
  });

  it("JSON nested deeper than 32 levels is a 422, and so are numbers beyond the safe-integer range", async () => {
    const deep = `{"name":"deep","x":${"[".repeat(40)}${"]".repeat(40)}}`;
    const res = await post("/v1/workspaces", deep);
    assert.equal(res.statusCode, 422, res.body);
    assert.match(res.body, /nested more than 32 levels/);
    expect422(await post("/v1/workspaces", '{"name":"n","x":1e400}'), ["body", "x"], /between/);
    expect422(await post("/v1/workspaces", '{"name":"n","x":99999999999999999999}'), ["body", "x"]);
  });

  it("integer query parameters take plain decimal digits only", async () => {
    for (const bad of ["0x10", "%205", "5%20", "1e3", "1.5", "NaN", "Infinity", "", "%2B5"]) {
      expect422(await get(`/v2/deployments?limit=${bad}`), ["query", "limit"]);
    }
    expect422(await get("/v2/deployments?offset=-1"), ["query", "offset"]);
    const ok = await get("/v2/deployments?limit=5&offset=0");
    assert.equal(ok.statusCode, 200, ok.body);
  });

  it("an integer beyond the database's range is a 422, and the bound is in /openapi.json", async () => {
    expect422(await get("/v2/deployments?offset=99999999999999999999"), ["query", "offset"]);
    expect422(await get("/v2/deployments?offset=2147483648"), ["query", "offset"]);
    assert.equal((await get("/v2/deployments?offset=2147483647")).statusCode, 200);
    expect422(await get("/v1/tracing-projects?offset=99999999999999999999"), ["query", "offset"]);
    const doc = (await get("/openapi.json")).json() as {
      paths: Record<string, Record<string, { parameters: { name: string; schema: { maximum?: number } }[] }>>;
    };
    const params = doc.paths["/v2/deployments"]?.get?.parameters ?? [];
    assert.equal(params.find((p) => p.name === "offset")?.schema.maximum, 2147483647);
    assert.equal(params.find((p) => p.name === "limit")?.schema.maximum, 100);
  });

  it("an array-form or repeated parameter is a 422", async () => {
    expect422(await get("/v2/deployments?limit[]=1"), ["query", "limit"], /array form/);
    expect422(await get("/v2/deployments?limit[0]=1"), ["query", "limit"], /array form/);
    expect422(await get("/v2/deployments?limit=1&limit=2"), ["query", "limit"]);
    expect422(await get("/v2/deployments?name_contains=a&name_contains=b"), ["query", "name_contains"]);
  });
});
