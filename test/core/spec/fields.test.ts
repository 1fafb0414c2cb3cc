import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { DEPLOYMENT_TYPE_DEFAULTS } from "../../../src/core/spec/effective.ts";
import { FIELD_DEFS, FIELDS, ResourceSpec } from "../../../src/core/spec/fields.ts";

const PAGE = join(import.meta.dirname, "../../../docs/resource-spec.md");

/** The rows of the first table after `heading`, each as its trimmed cells. */
function table(page: string, heading: string): string[][] {
  const start = page.indexOf("\n|", page.indexOf(heading)) + 1;
  const end = page.indexOf("\n\n", start);
  return page
    .slice(start, end === -1 ? undefined : end)
    .split("\n")
    .slice(2)
    .map((row) =>
      row
        .split("|")
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

/** The local runtime column's words for each handling. */
const LOCAL_WORDS: Record<string, RegExp> = {
  enforced: /^enforced$/,
  "where possible": /^(enforced|checked) where possible$/,
  default: /^default$/,
  "not enforced": /^not enforced locally$/,
};

describe("the ResourceSpec field registry", () => {
  it("every field has both mappings: what the local runtime does and what Kubernetes gets", () => {
    for (const [name, def] of Object.entries(FIELD_DEFS)) {
      assert.ok(def.local.why.trim(), `${name}: the local runtime's effect`);
      assert.ok(LOCAL_WORDS[def.local.handling], `${name}: a handling`);
      assert.equal(def.local.handling === "where possible", def.local.when !== undefined, `${name}: when`);
      const k8s = "sets" in def.kubernetes ? def.kubernetes.sets : def.kubernetes.notMapped;
      assert.ok(k8s.trim(), `${name}: the Kubernetes mapping or why there is none`);
    }
  });

  it("limits name fields of the registry; rounded fields are the bounded cores", () => {
    for (const [name, def] of Object.entries(FIELD_DEFS)) {
      if (def.limit) assert.ok(def.limit.field in FIELDS, `${name}'s limit ${def.limit.field}`);
      if (def.rounded) assert.equal(def.schema.type, "number", name);
    }
  });

  it("the API's ResourceSpec is the registry's fields, in its order, each optional and nullable", () => {
    assert.deepEqual(Object.keys(ResourceSpec.properties), Object.keys(FIELDS));
    assert.deepEqual(ResourceSpec.required ?? [], []);
    assert.equal(ResourceSpec.additionalProperties, false);
    assert.deepEqual(JSON.parse(JSON.stringify(ResourceSpec.properties.cpu)), {
      minimum: 0.1,
      maximum: 8,
      description: "Cores, 0.1–8, rounded to 0.1.",
      type: ["number", "null"],
    });
  });

  it("docs/resource-spec.md: its field table names every field once, with the registry's local handling and Kubernetes mapping", () => {
    const rows = table(readFileSync(PAGE, "utf8"), "## Field by field");
    const named = rows.map((cells) => [...(cells[0] ?? "").matchAll(/`([a-z_]+)`/g)].map((m) => m[1]));
    assert.deepEqual(
      named.flat().filter((f) => f === undefined || !(f in FIELDS)),
      [],
      "rows naming no field of the registry",
    );
    for (const [name, def] of Object.entries(FIELD_DEFS)) {
      const at = named.findIndex((names) => names.includes(name));
      assert.equal(named.filter((names) => names.includes(name)).length, 1, `one docs row for ${name}`);
      const [, , local = "", , kubernetes = ""] = rows[at] ?? [];
      assert.match(local, LOCAL_WORDS[def.local.handling] ?? /^$/, `${name}: local runtime column`);
      assert.equal(
        kubernetes.startsWith("nothing"),
        "notMapped" in def.kubernetes,
        `${name}: Kubernetes column`,
      );
    }
  });

  it("docs/resource-spec.md: the deployment types table is DEPLOYMENT_TYPE_DEFAULTS", () => {
    const rows = table(readFileSync(PAGE, "utf8"), "## Deployment types");
    for (const [type, d] of Object.entries(DEPLOYMENT_TYPE_DEFAULTS)) {
      const row = rows.find((cells) => cells[0]?.startsWith(`\`${type}\``));
      assert.ok(row, `a row for ${type}`);
      const [, scale = "", , memory = ""] = row;
      assert.ok(scale.startsWith(`${d.minScale}–${d.maxScale}`), `${type}: ${scale}`);
      assert.equal(scale.includes(`never fewer than ${d.floor}`), d.floor > 0, `${type}: its floor`);
      assert.equal(memory, String(d.memoryLimitMb ?? "none"), `${type}: memory_limit_mb`);
    }
    assert.equal(rows.length, Object.keys(DEPLOYMENT_TYPE_DEFAULTS).length);
  });
});
