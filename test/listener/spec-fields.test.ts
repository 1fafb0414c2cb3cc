import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FIELD_DEFS } from "../../src/core/spec/fields.ts";
import { manifestsFor } from "../../src/listener/manifests/index.ts";
import { desired, FULL_SPEC, manifestOptions } from "../helpers/listener-fixtures.ts";

const PASSWORDS = { database: "db", cache: "cache" };
const objectsOf = (spec: Record<string, unknown>) =>
  JSON.stringify(manifestsFor(desired({ resource_spec: spec }), manifestOptions(), PASSWORDS));

/**
 * The registry's Kubernetes column against what the manifests do: a field it says the listener
 * maps changes the objects when set alone, and one it says is not mapped changes nothing.
 */
describe("each ResourceSpec field on Kubernetes, as the registry declares it", () => {
  const none = objectsOf({});
  for (const [name, def] of Object.entries(FIELD_DEFS)) {
    const mapped = "sets" in def.kubernetes;
    it(`${name}: ${mapped ? "changes the objects" : "changes nothing"}`, () => {
      const sample = FULL_SPEC[name] ?? (mapped ? undefined : 1);
      assert.notEqual(sample, undefined, `FULL_SPEC has a value of ${name}`);
      assert.equal(objectsOf({ [name]: sample }) !== none, mapped);
    });
  }
});
