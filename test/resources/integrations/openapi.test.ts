import assert from "node:assert/strict";
import { before, it } from "node:test";
import { forEachDatabase } from "../../helpers/harness.ts";

interface Schema {
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
}
interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
  requestBody?: { content: Record<string, { schema: Schema }> };
  parameters?: { name: string; in: string }[];
  security?: unknown[];
}

const BASE = "/v1/integrations/forge/codehost";
const keysOf = (s: Schema | undefined) => Object.keys(s?.properties ?? {}).sort();

forEachDatabase("OpenAPI document of build on push", (suite) => {
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

  it("the webhook is public (signed, no API key) and documents its answers", () => {
    const o = op("post", `${BASE}/{integration_id}/webhook`);
    assert.deepEqual(o.security, []);
    for (const code of ["200", "202", "400", "401", "404", "413", "422"]) {
      assert.ok(o.responses[code], `documents ${code}`);
    }
    assert.ok(o.requestBody?.content["application/json"], "takes JSON");
    assert.deepEqual(keysOf(json(o, "200")), [
      "after",
      "delivery_id",
      "deployments",
      "event",
      "ignored",
      "ref",
    ]);
    assert.deepEqual(keysOf(json(o, "200")?.properties?.deployments?.items), [
      "deployment_id",
      "name",
      "note",
      "revision_id",
      "skipped",
      "tenant_id",
    ]);
  });

  it("rotation is an admin write that answers the record with the new secret", () => {
    const o = op("post", `${BASE}/{integration_id}/webhook-secret`);
    for (const code of ["200", "401", "403", "404", "422"]) assert.ok(o.responses[code], `documents ${code}`);
    assert.ok(keysOf(json(o, "200")).includes("webhook_secret"));
  });

  it("the integration record only gained optional fields", () => {
    const create = json(op("post", BASE), "201");
    assert.ok(keysOf(create).includes("webhook_secret"));
    assert.ok(keysOf(create).includes("has_webhook_secret"));
    assert.ok(!(create?.required ?? []).includes("webhook_secret"));
    const list = json(op("get", `${BASE}/install`), "200")?.items;
    assert.ok(!(list?.required ?? []).includes("has_webhook_secret"));
    assert.ok(!keysOf(list).includes("webhook_secret"), "listing never shows the secret");
  });
});
