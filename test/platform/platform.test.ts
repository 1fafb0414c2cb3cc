import assert from "node:assert/strict";
import { it } from "node:test";
import { forEachDatabase } from "../helpers/harness.ts";

forEachDatabase("platform", (suite) => {
  it("GET /ok answers without a key", async () => {
    const res = await suite.ctx.app.inject({ method: "GET", url: "/ok" });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { ok: true });
    assert.match(String(res.headers["x-request-id"]), /^[0-9a-f-]{36}$/);
  });
});
