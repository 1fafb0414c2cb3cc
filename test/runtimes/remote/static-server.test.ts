import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { STATIC_SERVER_FILE, STATIC_SERVER_SCRIPT } from "../../../src/runtimes/remote/static-server.ts";
import { freePort } from "../../e2e/stack.ts";
import { cleanupTemp, tempDir } from "../../helpers/local-runtime.ts";

/** The file server of a static site's listener image, run by this machine's Node on a real port. */

/** A raw request: the path is sent as written (fetch would normalise `..` away). */
function get(
  port: number,
  path: string,
  method = "GET",
): Promise<{ status: number; body: string; type?: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, method }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        body += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, type: res.headers["content-type"] }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function serve(root: string, spa: boolean): Promise<{ port: number; child: ChildProcess }> {
  const dir = tempDir();
  writeFileSync(join(dir, STATIC_SERVER_FILE), STATIC_SERVER_SCRIPT);
  const port = await freePort();
  const child = spawn(process.execPath, [join(dir, STATIC_SERVER_FILE), root, spa ? "1" : "0"], {
    env: { PORT: String(port) },
    stdio: "ignore",
  });
  for (let i = 0; i < 100; i++) {
    if (
      await get(port, "/").then(
        () => true,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { port, child };
}

describe("a static site's file server in a listener image", () => {
  const children: ChildProcess[] = [];
  let site = "";
  let secretDir = "";
  let spaPort = 0;
  let plainPort = 0;

  before(async () => {
    const top = tempDir();
    site = join(top, "dist");
    secretDir = top;
    mkdirSync(join(site, "docs"), { recursive: true });
    writeFileSync(join(site, "index.html"), "<h1>home</h1>");
    writeFileSync(join(site, "app.js"), "console.log(1)");
    writeFileSync(join(site, "docs", "index.html"), "<h1>docs</h1>");
    writeFileSync(join(top, "secret.txt"), "not served");
    const spa = await serve(site, true);
    const plain = await serve(site, false);
    children.push(spa.child, plain.child);
    spaPort = spa.port;
    plainPort = plain.port;
  });
  after(() => {
    for (const c of children) c.kill();
    cleanupTemp();
  });

  it("serves files with their types, and a directory's index.html", async () => {
    assert.deepEqual(await get(plainPort, "/"), {
      status: 200,
      body: "<h1>home</h1>",
      type: "text/html; charset=utf-8",
    });
    const js = await get(plainPort, "/app.js?v=2");
    assert.equal(js.status, 200);
    assert.equal(js.type, "text/javascript; charset=utf-8");
    assert.equal((await get(plainPort, "/docs/")).body, "<h1>docs</h1>");
    assert.equal((await get(plainPort, "/docs")).body, "<h1>docs</h1>");
    assert.equal((await get(plainPort, "/app.js", "HEAD")).body, "");
  });

  it("a missing path is 404, or index.html for a single-page app's route (not for a missing asset)", async () => {
    assert.equal((await get(plainPort, "/settings/profile")).status, 404);
    assert.deepEqual(await get(spaPort, "/settings/profile"), {
      status: 200,
      body: "<h1>home</h1>",
      type: "text/html; charset=utf-8",
    });
    assert.equal((await get(spaPort, "/missing.js")).status, 404);
  });

  it("nothing outside the root, however the path is written; only GET and HEAD", async () => {
    assert.ok(secretDir);
    for (const path of [
      "/../secret.txt",
      "/%2e%2e/secret.txt",
      "/docs/..%2f..%2fsecret.txt",
      "/..%5csecret.txt",
    ]) {
      const r = await get(plainPort, path);
      assert.notEqual(r.body, "not served", path);
      assert.ok(r.status === 404 || r.status === 400, `${path}: ${r.status}`);
    }
    assert.equal((await get(plainPort, "/%E0%A4%A")).status, 400, "a malformed escape");
    assert.equal((await get(plainPort, "/%00")).status, 400);
    const post = await get(plainPort, "/", "POST");
    assert.equal(post.status, 405);
  });
});
