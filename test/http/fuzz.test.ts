import assert from "node:assert/strict";
import { it } from "node:test";
import { casesFor, type FuzzRequest, type OpenApiDoc } from "../helpers/fuzz-cases.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";

/**
 * Every operation of /openapi.json gets malformed input, with an admin key and with none; no
 * answer may be a 5xx. Driven by the document, so routes added later are covered as they appear.
 */

const SEED = 20261122;
const json = { "content-type": "application/json" };

const PROVIDER = {
  provider_id: "fuzz-idp",
  name: "Fuzz IdP",
  client_id: "client",
  client_secret: "secret",
  auth_url: "https://idp.example.com/authorize",
  token_url: "https://idp.example.com/token",
};

/** Valid bodies where the schema alone cannot make one, so that one bad field at a time gets deep. */
const BASELINES: Record<string, unknown> = {
  "post /v2/deployments": {
    name: "fuzz-made",
    source: "internal_template",
    source_revision_config: { repo_ref: "hello-http", framework_config_path: "slipway.json" },
  },
  "post /v2/auth/providers": { ...PROVIDER, provider_id: "fuzz-made" },
  "post /v2/auth/authenticate": { user_id: "user-1", provider: "fuzz-idp", scopes: ["openid"] },
};

/** Real resources, so that malformed input also reaches handlers that find what they look for. */
async function seed(ctx: TestContext): Promise<void> {
  const h = { ...ctx.headers(ctx.keys.system), ...json };
  const post = async (url: string, payload: unknown) => {
    const res = await ctx.app.inject({ method: "POST", url, headers: h, payload: JSON.stringify(payload) });
    assert.ok(res.statusCode < 300, `${url}: ${res.body}`);
    return res.json() as { id: string };
  };
  const dep = await post("/v2/deployments", {
    name: "fuzz-app",
    source: "internal_template",
    source_revision_config: { repo_ref: "hello-http", framework_config_path: "slipway.json" },
    secrets: [{ name: "TOKEN", value: "s3cret" }],
  });
  const key = await post("/v2/tags/keys", { key: "team" });
  const value = await post(`/v2/tags/keys/${key.id}/values`, { value: "core" });
  await post(`/v2/deployments/${dep.id}/tags`, { tag_value_id: value.id });
  await post("/v2/auth/providers", PROVIDER);
}

/** The first array of records in a list response, wherever the envelope keeps it. */
function firstRecord(body: unknown): Record<string, unknown> | undefined {
  const list = Array.isArray(body)
    ? body
    : typeof body === "object" && body !== null
      ? Object.values(body).find(Array.isArray)
      : undefined;
  const first = list?.[0];
  return typeof first === "object" && first !== null ? (first as Record<string, unknown>) : undefined;
}

/**
 * Valid path values: each `{param}` is looked up in the collection its path starts with (the
 * record's field of the same name, else its `id`); what cannot be found stays a random UUID.
 */
async function realPathValues(
  ctx: TestContext,
  doc: OpenApiDoc,
): Promise<Record<string, Record<string, string>>> {
  const found: Record<string, Record<string, string>> = {};
  const headers = ctx.headers(ctx.keys.system);
  for (const path of Object.keys(doc.paths)) {
    const values: Record<string, string> = {};
    const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
    for (const name of names) {
      const collection = path.slice(0, path.indexOf(`{${name}}`)).replace(/\/$/, "");
      const url = collection.replace(/\{([^}]+)\}/g, (_, n: string) => values[n] ?? "x");
      const res = await ctx.app.inject({ method: "GET", url, headers });
      const record = res.statusCode === 200 ? firstRecord(res.json()) : undefined;
      const value = record?.[name] ?? record?.id;
      values[name] = typeof value === "string" ? value : "4b1d7c1e-0000-4000-a000-000000000000";
    }
    found[path] = values;
  }
  return found;
}

async function send(ctx: TestContext, r: FuzzRequest) {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<{ statusCode: number; body: string }>((resolve) => {
    timer = setTimeout(() => resolve({ statusCode: 599, body: "no answer within 15 s" }), 15_000);
  });
  try {
    // As a stream: an event stream (`/v2/events`, log follows) answers with its status and headers
    // and then stays open; the status is what is checked, so the body is read only when it ends.
    const answered = ctx.app
      .inject({
        method: r.method as "GET",
        url: r.url,
        headers: r.headers,
        payload: r.payload,
        payloadAsStream: true,
      })
      .then(async (res) => {
        const stream = res.stream();
        if (String(res.headers["content-type"] ?? "").startsWith("text/event-stream")) {
          stream.destroy();
          return { statusCode: res.statusCode, body: "" };
        }
        const chunks: Buffer[] = [];
        for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
        return { statusCode: res.statusCode, body: Buffer.concat(chunks).toString("utf8") };
      });
    return await Promise.race([answered, hung]);
  } finally {
    clearTimeout(timer);
  }
}

forEachDatabase("fuzz: malformed input to every operation of /openapi.json", (suite) => {
  it("never answers a 5xx, with an admin key or without a key", async () => {
    const ctx = suite.ctx;
    await seed(ctx);
    const doc = (await ctx.app.inject({ method: "GET", url: "/openapi.json" })).json() as OpenApiDoc;
    const real = await realPathValues(ctx, doc);
    const failures: string[] = [];
    let sent = 0;
    let operations = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        operations++;
        // DELETE on a real resource would remove what later operations need; random ids instead.
        const pathValues = method === "delete" ? {} : (real[path] ?? {});
        const keyed = casesFor(doc, path, method, op, {
          pathValues,
          headers: ctx.headers(ctx.keys.system),
          seed: SEED + operations,
          baseline: BASELINES[`${method} ${path}`],
        });
        const anonymous = casesFor(doc, path, method, op, { pathValues, headers: {}, seed: SEED }).filter(
          (_, i) => i % 10 === 0,
        );
        for (const r of [...keyed, ...anonymous]) {
          const res = await send(ctx, r);
          sent++;
          if (res.statusCode >= 500) {
            const who = r.headers["x-api-key"] ? "admin" : "no key";
            failures.push(
              `${r.method} ${path} [${who}] ${r.label} → ${res.statusCode} ${res.body.slice(0, 200)}`,
            );
          }
        }
      }
    }
    assert.ok(operations >= 40, `only ${operations} operations in /openapi.json`);
    assert.ok(sent > 1000, `only ${sent} requests sent`);
    assert.deepEqual(
      failures,
      [],
      `${failures.length} of ${sent} requests gave a 5xx:\n${failures.join("\n")}`,
    );
  });
});
