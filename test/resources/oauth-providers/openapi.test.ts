import assert from "node:assert/strict";
import { before, it } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { forEachDatabase } from "../../helpers/harness.ts";

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  items?: Schema;
  anyOf?: Schema[];
}
interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
  requestBody?: { content: Record<string, { schema: Schema }> };
  parameters?: { name: string; in: string; required?: boolean }[];
  security?: unknown[];
}

/** Every OAuth operation: its success code first, then the other codes it must document. */
const OPERATIONS: [string, string, string[]][] = [
  ["get", "/v2/auth/providers", ["200"]],
  ["post", "/v2/auth/providers", ["200", "409"]],
  ["post", "/v2/auth/providers/mcp-discover", ["200", "409", "502"]],
  ["get", "/v2/auth/providers/{provider_id}", ["200"]],
  ["patch", "/v2/auth/providers/{provider_id}", ["200"]],
  ["delete", "/v2/auth/providers/{provider_id}", ["200"]],
  ["post", "/v2/auth/authenticate", ["200", "502"]],
  ["get", "/v2/auth/wait/{auth_id}", ["200"]],
  ["post", "/v2/auth/callback/{provider_id}", ["200", "400", "502"]],
  ["get", "/v2/auth/tokens", ["200"]],
  ["delete", "/v2/auth/tokens", ["200", "502"]],
  ["get", "/v2/auth/tokens/exists", ["200"]],
  ["patch", "/v2/auth/tokens/{token_id}/metadata", ["200"]],
  ["delete", "/v2/auth/tokens/{token_id}", ["204", "502"]],
  ["get", "/v2/auth/tokens/workspace/slack/exists", ["200"]],
  ["delete", "/v2/auth/tokens/workspace/slack", ["200", "502"]],
  ["get", "/v2/auth/agents/{agent_id}/connections", ["200"]],
  ["post", "/v2/auth/agents/{agent_id}/connections", ["201", "409"]],
  ["delete", "/v2/auth/agents/{agent_id}/connections/{connection_id}", ["204"]],
  ["get", "/v2/auth/catalog", ["200"]],
  ["get", "/v2/auth/catalog/{template}", ["200"]],
  ["post", "/v2/auth/proxy/{provider_id}", ["200", "409", "413", "502"]],
  ["get", "/v2/auth/proxy/{provider_id}/{*}", ["200", "409", "502"]],
  ["put", "/v2/auth/proxy/{provider_id}/{*}", ["200", "409", "413", "502"]],
];
/** Browser landings: no key, an HTML page. */
const PUBLIC: [string, string][] = [
  ["get", "/v2/auth/callback/{provider_id}"],
  ["get", "/v2/auth/setup/{provider_id}"],
];

const keysOf = (s: Schema | undefined) => Object.keys(s?.properties ?? {}).sort();

forEachDatabase("OpenAPI document of OAuth providers, flows, tokens and agent connections", (suite) => {
  let doc: { paths: Record<string, Record<string, Operation>> };
  before(async () => {
    doc = (await suite.ctx.app.inject({ method: "GET", url: "/openapi.json" })).json();
  });
  const op = (method: string, path: string): Operation => {
    const found = doc.paths[path]?.[method];
    assert.ok(found, `${method} ${path} is documented`);
    return found;
  };
  const json = (o: Operation, code: string) => o.responses[code]?.content?.["application/json"]?.schema;

  it("is valid OpenAPI 3.1", async () => {
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  });

  for (const [method, path, codes] of OPERATIONS) {
    it(`${method.toUpperCase()} ${path}: success and error responses, request schema`, () => {
      const o = op(method, path);
      for (const code of [...codes, "401", "403", "404", "422", "500"]) {
        assert.ok(o.responses[code], `documents ${code}`);
      }
      const success = codes[0] as string;
      if (success === "204") assert.equal(o.responses["204"]?.content, undefined, "no body");
      else if (path.includes("/proxy/")) {
        // The provider's own answer, whatever its media type.
        assert.ok(o.responses[success]?.content?.["*/*"], "any media type");
      } else assert.ok(json(o, success), "response schema");
      if (["post", "patch"].includes(method)) {
        assert.ok(o.requestBody?.content["application/json"]?.schema, "request schema");
      }
      assert.ok(!o.responses["201"] || success === "201", "no stray 201");
    });
  }

  for (const [method, path] of PUBLIC) {
    it(`${method.toUpperCase()} ${path}: public, answers an HTML page`, () => {
      const o = op(method, path);
      assert.deepEqual(o.security, []);
      assert.ok(o.responses["200"]?.content?.["text/html"]);
      for (const code of ["400", "502", "422"]) assert.ok(o.responses[code], `documents ${code}`);
      assert.ok(!o.responses["401"]);
    });
  }

  it("setup documents its optional query parameters", () => {
    const params = op("get", "/v2/auth/setup/{provider_id}").parameters ?? [];
    const query = params.filter((p) => p.in === "query");
    assert.deepEqual(query.map((p) => p.name).sort(), [
      "code",
      "error",
      "error_description",
      "installation_id",
      "setup_action",
      "state",
    ]);
    assert.ok(query.every((p) => !p.required));
  });

  it("token routes document provider_id (required where the anchor says) and user_id", () => {
    const params = (method: string, path: string) =>
      new Map((op(method, path).parameters ?? []).map((p) => [`${p.in}:${p.name}`, p.required ?? false]));
    assert.equal(params("get", "/v2/auth/tokens/exists").get("query:provider_id"), true);
    assert.equal(params("delete", "/v2/auth/tokens").get("query:provider_id"), true);
    assert.equal(params("get", "/v2/auth/tokens").get("query:provider_id"), false);
    for (const [m, p] of [
      ["get", "/v2/auth/tokens"],
      ["get", "/v2/auth/tokens/exists"],
      ["delete", "/v2/auth/tokens"],
      ["patch", "/v2/auth/tokens/{token_id}/metadata"],
      ["delete", "/v2/auth/tokens/{token_id}"],
    ] as const) {
      assert.equal(params(m, p).get("query:user_id"), false, `${m} ${p}`);
    }
  });

  it("shapes of the anchor: token summary, status, authenticate request, connections", () => {
    const summary = json(op("get", "/v2/auth/tokens"), "200")?.items;
    for (const field of [
      "id",
      "provider_id",
      "provider_account_label",
      "scopes",
      "expires_at",
      "is_default",
    ]) {
      assert.ok(keysOf(summary).includes(field), field);
    }
    assert.deepEqual(keysOf(json(op("get", "/v2/auth/tokens/exists"), "200")), ["has_token"]);
    assert.deepEqual(
      keysOf(
        op("patch", "/v2/auth/tokens/{token_id}/metadata").requestBody?.content["application/json"]?.schema,
      ),
      ["is_default", "provider_account_label"],
    );
    const auth = op("post", "/v2/auth/authenticate").requestBody?.content["application/json"]?.schema;
    for (const field of ["agent_id", "force_new", "is_default", "token_id", "user_id", "ls_user_id"]) {
      assert.ok(keysOf(auth).includes(field), field);
    }
    assert.deepEqual(auth?.required?.slice().sort(), ["provider", "scopes"]);
    assert.equal(auth?.properties?.force_new?.default, false);
    assert.equal(auth?.properties?.is_default?.default, true);
    const result = json(op("post", "/v2/auth/authenticate"), "200");
    assert.deepEqual(result?.properties?.status?.enum, [
      "completed",
      "pending",
      "connection_required",
      "token_expired",
    ]);
    assert.ok(keysOf(result).includes("user_id") && keysOf(result).includes("metadata"));
    const connection = json(op("post", "/v2/auth/agents/{agent_id}/connections"), "201");
    assert.deepEqual(keysOf(connection), [
      "agent_id",
      "created_at",
      "created_by",
      "expires_at",
      "id",
      "oauth_token_id",
      "provider_account_label",
      "provider_id",
      "scopes",
    ]);
    assert.deepEqual(keysOf(json(op("get", "/v2/auth/agents/{agent_id}/connections"), "200")), ["data"]);
    assert.ok(keysOf(json(op("delete", "/v2/auth/providers/{provider_id}"), "200")).includes("message"));
    assert.deepEqual(
      keysOf(op("post", "/v2/auth/callback/{provider_id}").requestBody?.content["application/json"]?.schema),
      ["code", "state"],
    );
  });
});
