import assert from "node:assert/strict";
import { before, it } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { forEachDatabase } from "../../helpers/harness.ts";

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  enum?: unknown[];
  required?: string[];
}
interface Operation {
  security?: unknown[];
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  parameters?: { name: string; in: string }[];
}

const SEARCHES = [
  "/v1/projects/{deployment_id}/deploy_logs",
  "/v1/projects/{deployment_id}/revisions/{revision_id}/deploy_logs",
  "/v1/projects/{deployment_id}/revisions/{revision_id}/build_logs",
];
const LEGACY = [
  ["/v1/integrations/codehost/install", "/v1/integrations/forge/codehost/install"],
  [
    "/v1/integrations/codehost/{integration_id}/repos",
    "/v1/integrations/forge/codehost/{integration_id}/repos",
  ],
] as const;

/** Every enum value a schema allows, through anyOf branches. */
const enums = (s: Schema | undefined): unknown[] =>
  s ? [...(s.enum ?? []), ...(s.anyOf ?? []).flatMap((b) => enums(b))] : [];

forEachDatabase("OpenAPI: log searches and legacy integration paths", (suite) => {
  let doc: { paths: Record<string, Record<string, Operation>> };
  before(async () => {
    doc = (await suite.ctx.app.inject({ method: "GET", url: "/openapi.json" })).json();
  });

  it("is valid OpenAPI 3.1", async () => {
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  });

  for (const path of SEARCHES) {
    it(`POST ${path}: path parameters, every body field, the answer and its error codes`, () => {
      const op = doc.paths[path]?.post;
      assert.ok(op, "documented");
      const params = (op.parameters ?? []).map((p) => `${p.in}:${p.name}`);
      assert.ok(params.includes("path:deployment_id"));
      if (path.includes("revision_id")) assert.ok(params.includes("path:revision_id"));
      const body = op.requestBody?.content["application/json"]?.schema;
      assert.deepEqual(Object.keys(body?.properties ?? {}).sort(), [
        "end_time",
        "level",
        "limit",
        "offset",
        "order",
        "query",
        "start_time",
      ]);
      assert.deepEqual(body?.required ?? [], [], "every field optional");
      assert.deepEqual(enums(body?.properties?.order), ["asc", "desc"]);
      for (const level of ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]) {
        assert.ok(enums(body?.properties?.level).includes(level), level);
      }
      const answer = op.responses["200"]?.content?.["application/json"]?.schema;
      assert.deepEqual(Object.keys(answer?.properties ?? {}).sort(), ["logs", "next_offset"]);
      assert.deepEqual(Object.keys(answer?.properties?.logs?.items?.properties ?? {}).sort(), [
        "id",
        "level",
        "message",
        "timestamp",
      ]);
      for (const code of ["400", "401", "403", "404", "413", "415", "422", "429", "500"]) {
        assert.ok(op.responses[code], `documents ${code}`);
      }
    });
  }

  for (const [legacy, forge] of LEGACY) {
    it(`GET ${legacy}: documented like ${forge}`, () => {
      const op = doc.paths[legacy]?.get;
      const twin = doc.paths[forge]?.get;
      assert.ok(op && twin, "both documented");
      assert.deepEqual(Object.keys(op.responses).sort(), Object.keys(twin.responses).sort());
      assert.deepEqual(op.responses["200"], twin.responses["200"]);
      assert.deepEqual(op.parameters ?? [], twin.parameters ?? []);
      for (const code of ["200", "401", "403", "404", "422", "429"]) assert.ok(op.responses[code], code);
    });
  }
});
