import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { GENERATED_PATH, generateTypes } from "../../tools/generate-sdk.ts";

describe("SDK types", () => {
  it("src/sdk/openapi.ts is what a freshly built app's /openapi.json generates (run `npm run sdk:generate`)", async () => {
    const fresh = await generateTypes();
    const committed = readFileSync(GENERATED_PATH, "utf8");
    // A line diff names the first drift instead of a 12,000-line string comparison.
    const a = committed.split("\n");
    const b = fresh.split("\n");
    const first = a.findIndex((line, i) => line !== b[i]);
    assert.equal(
      first === -1 && a.length === b.length,
      true,
      `src/sdk/openapi.ts is stale from line ${first + 1}: committed ${JSON.stringify(a[first])}, fresh ${JSON.stringify(b[first])}. Run npm run sdk:generate.`,
    );
    assert.match(committed, /"\/v2\/deployments\/\{deployment_id\}": \{/);
  });
});
