import assert from "node:assert/strict";
import { it } from "node:test";
import { call } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

interface AuditRecord {
  action: string;
  resource_id: string | null;
  status_code: number | null;
  request_id: string;
}

/**
 * The sweep's finding: a refused write with a NUL byte in a path parameter answered 422 but its
 * audit record was never written (PostgreSQL's text refuses 0x00). The store escapes it now.
 */
forEachDatabase("audit log: a NUL byte in a path parameter", (suite) => {
  for (const [method, url, action] of [
    ["PATCH", "/v2/deployments/a%00b", "deployments.update"],
    ["DELETE", "/v2/webhooks/%00", "webhooks.delete"],
  ] as const) {
    it(`${method} ${url}: refused, and the refusal is audited with the NUL escaped`, async () => {
      const ctx = suite.ctx;
      const requestId = `nul-${method.toLowerCase()}-${Date.now()}`;
      const res = await call(ctx, method, url, method === "PATCH" ? { name: "x" } : undefined, {
        key: ctx.keys.admin,
        headers: { "x-request-id": requestId },
      });
      assert.ok(res.status >= 400 && res.status < 500, `a 4xx, got ${res.status}`);
      const log = await call<AuditRecord[]>(ctx, "GET", `/v1/audit-log?action=${action}`, undefined, {
        key: ctx.keys.admin,
      });
      assert.equal(log.status, 200);
      const mine = log.body.find((r) => r.request_id === requestId);
      assert.ok(mine, `the refused write has an audit record: ${JSON.stringify(log.body)}`);
      assert.equal(mine.status_code, res.status);
      const raw = decodeURIComponent(url.split("/").at(-1) ?? "");
      assert.equal(mine.resource_id, raw.replaceAll("\0", "\\u0000"));
      assert.ok(!ctx.readLogs().includes("writing the audit record failed"), "no failed audit write");
    });
  }

  it("every write route with a path parameter: a NUL byte in it is refused and audited", async () => {
    const ctx = suite.ctx;
    const doc = (await ctx.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    const sent: { requestId: string; what: string; status: number }[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (!path.includes("{")) continue;
      for (const [method, op] of Object.entries(ops)) {
        if (!["post", "put", "patch", "delete"].includes(method)) continue;
        // Routes without a key (signed upload URLs, OAuth callbacks) have no caller to audit.
        if (Array.isArray(op.security) && op.security.length === 0) continue;
        const url = path.replace(/\{[^}]+\}/g, "a%00b");
        const requestId = `nul-all-${sent.length}-${Date.now()}`;
        const res = await ctx.app.inject({
          method: method.toUpperCase() as "POST",
          url,
          headers: {
            ...ctx.headers(ctx.keys.system),
            "x-request-id": requestId,
            "content-type": "application/json",
          },
          payload: method === "delete" ? undefined : "{}",
        });
        sent.push({ requestId, what: `${method.toUpperCase()} ${path}`, status: res.statusCode });
      }
    }
    assert.ok(sent.length >= 30, `only ${sent.length} write routes with a path parameter`);
    assert.deepEqual(
      sent.filter((r) => r.status >= 500).map((r) => `${r.what}: ${r.status}`),
      [],
      "no 5xx",
    );
    const log = await call<AuditRecord[]>(ctx, "GET", "/v1/audit-log?limit=500", undefined, {
      key: ctx.keys.system,
    });
    const recorded = new Set(log.body.map((r) => r.request_id));
    assert.deepEqual(
      sent.filter((r) => !recorded.has(r.requestId)).map((r) => `${r.what} (${r.status})`),
      [],
      "every refused write is in the audit log",
    );
  });
});
