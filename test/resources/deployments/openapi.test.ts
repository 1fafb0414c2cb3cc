import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { createTestContext, type TestContext } from "../../helpers/harness.ts";

/** Every operation of this area, with the statuses it must document beyond 401/403/404/422/500. */
const OPERATIONS: [string, string, string[]][] = [
  ["post", "/v2/deployments", ["201", "409", "502"]],
  ["get", "/v2/deployments", ["200"]],
  ["get", "/v2/deployments/{deployment_id}", ["200", "304"]],
  ["patch", "/v2/deployments/{deployment_id}", ["200", "400", "412", "502"]],
  ["delete", "/v2/deployments/{deployment_id}", ["204"]],
  ["delete", "/v2/deployments", ["200", "207"]],
  ["get", "/v2/deployments/{deployment_id}/revisions", ["200"]],
  ["get", "/v2/deployments/{deployment_id}/revisions/{revision_id}", ["200"]],
  ["post", "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy", ["200", "400"]],
  ["post", "/v2/deployments/{deployment_id}/revisions/{revision_id}/interrupt", ["200", "400"]],
  ["post", "/v2/deployments/{deployment_id}/revisions/{revision_id}/interruption", ["200", "400"]],
  ["post", "/v2/deployments/{deployment_id}/upload-url", ["201", "400"]],
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
  parameters?: { name: string; in: string; required?: boolean; schema?: { type?: string } }[];
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
      if (success === "204") assert.equal(op.responses[success]?.content, undefined, "no body");
      else if (success !== "304")
        assert.ok(op.responses[success]?.content?.["application/json"]?.schema, "response schema");
      const bodiless = ["/redeploy", "/interrupt", "/interruption", "/upload-url"].some((p) =>
        path.endsWith(p),
      );
      if (["post", "patch"].includes(method) && !bodiless) {
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
      "name",
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

  const params = (path: string, method: string) =>
    Object.fromEntries((doc.paths[path]?.[method]?.parameters ?? []).map((p) => [`${p.in}:${p.name}`, p]));

  it("DELETE: delete_tracing_project (optional boolean); bulk: deployment_ids (required array)", () => {
    const single = params("/v2/deployments/{deployment_id}", "delete");
    assert.equal(single["query:delete_tracing_project"]?.schema?.type, "boolean");
    assert.notEqual(single["query:delete_tracing_project"]?.required, true);
    const bulk = params("/v2/deployments", "delete");
    assert.equal(bulk["query:deployment_ids"]?.required, true);
    assert.equal(bulk["query:deployment_ids"]?.schema?.type, "array");
    assert.equal(bulk["query:delete_tracing_project"]?.schema?.type, "boolean");
    const op = doc.paths["/v2/deployments"]?.delete;
    for (const code of ["200", "207", "404"]) {
      const schema = op?.responses[code]?.content?.["application/json"]?.schema as {
        properties: Record<string, unknown>;
      };
      assert.ok(schema.properties.results, `${code} lists each id's result`);
    }
  });

  it("revisions: status_message on the record; remote_reconciled on the list", () => {
    const list = params("/v2/deployments/{deployment_id}/revisions", "get");
    assert.ok(list["query:remote_reconciled"]);
    const schema = doc.paths["/v2/deployments/{deployment_id}/revisions/{revision_id}"]?.get?.responses["200"]
      ?.content?.["application/json"]?.schema as { properties: Record<string, unknown>; required: string[] };
    assert.ok(schema.properties.status_message);
    assert.ok(schema.required.includes("status_message"));
  });

  it("upload-url: object_path next to source_tarball_path", () => {
    const schema = doc.paths["/v2/deployments/{deployment_id}/upload-url"]?.post?.responses["201"]?.content?.[
      "application/json"
    ]?.schema as { properties: Record<string, unknown>; required: string[] };
    assert.ok(schema.required.includes("object_path"));
    assert.ok(schema.required.includes("source_tarball_path"));
  });

  it("resource_spec: the API, queue and cache cpu bounds", () => {
    const schema = doc.paths["/v2/deployments"]?.post?.requestBody?.content["application/json"]?.schema as {
      properties: {
        source_config: {
          properties: { resource_spec: { properties: Record<string, Record<string, unknown>> } };
        };
      };
    };
    const spec = schema.properties.source_config.properties.resource_spec.properties;
    assert.equal(spec.cpu?.minimum, 0.1);
    assert.equal(spec.cpu?.maximum, 8);
    assert.equal(spec.redis_cpu_limit?.maximum, 16);
    assert.equal(spec.db_cpu?.maximum, undefined);
  });
});
