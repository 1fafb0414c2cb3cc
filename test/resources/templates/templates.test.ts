import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { it } from "node:test";
import { findTemplate, listTemplates } from "../../../src/templates/catalog.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** GETs the URL until the app answers (it is starting), or the process exits. */
async function getWhenUp(url: string, child: ChildProcess): Promise<Response> {
  for (let attempt = 0; attempt < 400; attempt++) {
    if (child.exitCode !== null) throw new Error(`the app exited with ${child.exitCode}`);
    try {
      return await fetch(url);
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error("the app did not start listening");
}

it("every template is a runnable app: package.json start script, no dependencies, a valid slipway.json", () => {
  const templates = listTemplates();
  assert.ok(templates.length >= 1);
  for (const t of templates) {
    assert.match(t.name, /^[a-z][a-z0-9-]*$/);
    assert.ok(t.description.length > 10);
    assert.deepEqual(findTemplate(t.name), t);
    const pkg = JSON.parse(readFileSync(join(t.path, "package.json"), "utf8")) as Record<string, unknown>;
    assert.equal(typeof (pkg.scripts as Record<string, unknown>).start, "string");
    assert.equal(pkg.dependencies, undefined, "no dependencies: builds need no network");
    const app = JSON.parse(readFileSync(join(t.path, "slipway.json"), "utf8")) as Record<string, unknown>;
    assert.equal(typeof app.start, "string");
    assert.equal(app.healthcheck, "/");
    for (const v of Object.values(app.env as Record<string, unknown>)) assert.equal(typeof v, "string");
  }
  assert.equal(findTemplate("nope"), undefined);
  assert.equal(findTemplate("../templates"), undefined);
});

it("the hello-http template listens on $PORT and answers / with 200 JSON using its env", async () => {
  const t = findTemplate("hello-http");
  assert.ok(t && existsSync(t.path));
  const config = JSON.parse(readFileSync(join(t.path, "slipway.json"), "utf8")) as {
    start: string;
    env: Record<string, string>;
  };
  const port = await freePort();
  const [cmd, ...args] = config.start.split(" ");
  const child = spawn(cmd as string, args, {
    cwd: t.path,
    env: { PATH: process.env.PATH, ...config.env, GREETING: "hi from the test", PORT: String(port) },
    stdio: "ignore",
  });
  try {
    const res = await getWhenUp(`http://127.0.0.1:${port}/`, child);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    assert.deepEqual(await res.json(), { message: "hi from the test", path: "/", template: "hello-http" });
    const missing = await fetch(`http://127.0.0.1:${port}/nope`);
    assert.equal(missing.status, 404);
  } finally {
    child.kill("SIGTERM");
    await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once("exit", resolve)));
  }
});

forEachDatabase("GET /v2/templates", (suite) => {
  it("lists every built-in template as {name, description}, for any key", async () => {
    const ctx = suite.ctx;
    for (const key of [ctx.keys.viewer, ctx.keys.member, ctx.keys.boundMember, ctx.other.admin]) {
      const res = await ctx.app.inject({ method: "GET", url: "/v2/templates", headers: ctx.headers(key) });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(
        res.json(),
        listTemplates().map((t) => ({ name: t.name, description: t.description })),
      );
    }
  });

  authMatrix(suite, { method: "GET", url: () => "/v2/templates" });
});
