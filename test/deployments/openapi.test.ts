import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { createTestContext, type TestContext } from "../helpers/harness.ts";

/** Every operation of this area, with the statuses it must document beyond 401/403/404/422/500. */
const OPERATIONS: [string, string, string[]][] = [
  ["post", "/v2/deployments", ["201", "409", "502"]],
  ["get", "/v2/deployments", ["200"]],
  ["get", "/v2/deployments/{deployment_id}", ["200", "304"]],
  ["patch", "/v2/deployments/{deployment_id}", ["200", "400", "412", "502"]],
  ["delete", "/v2/deployments/{deployment_id}", ["200"]],
  ["get", "/v2/deployments/{deployment_id}/revisions", ["200"]],
  ["get", "/v2/deployments/{deployment_id}/revisions/{revision_id}", ["200"]],
  ["post", "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy", ["200", "400"]],
  ["post", "/v2/deployments/{deployment_id}/revisions/{revision_id}/interrupt", ["200", "400"]],
  ["get", "/v1/tracing-projects", ["200"]],
  ["get", "/v1/tracing-projects/{id}", ["200"]],
  ["get", "/v2/tags/keys", ["200"]],
  ["post", "/v2/tags/keys", ["201", "409"]],
  ["delete", "/v2/tags/keys/{key_id}", ["200"]],
  ["get", "/v2/tags/keys/{key_id}/values", ["200"]],
  ["post", "/v2/tags/keys/{key_id}/values", ["201", "409"]],
  ["delete", "/v2/tags/keys/{key_id}/values/{value_id}", ["200"]],
  ["get", "/v2/deployments/{deployment_id}/tags", ["200"]],
  ["post", "/v2/deployments/{deployment_id}/tags", ["201", "409"]],
  ["delete", "/v2/deployments/{deployment_id}/tags/{tag_value_id}", ["200"]],
];

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
  requestBody?: { content: Record<string, { schema: unknown }> };
  parameters?: { name: string; in: string }[];
}

describe("OpenAPI document of deployments, revisions, tracing projects and tags", () => {
  let ctx: TestContext;
  let doc: { paths: Record<string, Record<string, Operation>> };
  before(async () => {
    ctx = await createTestContext("pglite");
    doc = (await ctx.app.inject({ method: "GET", url: "/openapi.json" })).json();
  });
  after(async () => {
    await ctx.close();
  });

  it("is valid OpenAPI 3.1", async () => {
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  });

  for (const [method, path, codes] of OPERATIONS) {
    it(`${method.toUpperCase()} ${path}: request and response schemas, error responses`, () => {
      const op = doc.paths[path]?.[method];
      assert.ok(op, "documented");
      for (const code of [...codes, "401", "403", "404", "422", "500"]) {
        assert.ok(op.responses[code], `documents ${code}`);
      }
      const success = codes[0] as string;
      if (success !== "304")
        assert.ok(op.responses[success]?.content?.["application/json"]?.schema, "response schema");
      if (["post", "patch"].includes(method) && !path.endsWith("/redeploy") && !path.endsWith("/interrupt")) {
        assert.ok(op.requestBody?.content["application/json"]?.schema, "request schema");
        assert.ok(op.responses["413"] && op.responses["415"], "body errors");
      }
    });
  }

  it("the list documents every query parameter of the interface", () => {
    const params = (doc.paths["/v2/deployments"]?.get?.parameters ?? []).map((p) => `${p.in}:${p.name}`);
    for (const name of [
      "limit",
      "offset",
      "name_contains",
      "status",
      "remote_reconciled",
      "tag_value_ids",
      "image_version",
      "deployment_type",
      "deployment_ids",
    ]) {
      assert.ok(params.includes(`query:${name}`), name);
    }
  });
});
