import assert from "node:assert/strict";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { StaticSite } from "../../../../src/runtimes/local/routing/static-site.ts";
import { cleanupTemp, tempDir } from "../../../helpers/local-runtime.ts";

interface Got {
  status: number;
  type: string | undefined;
  location: string | undefined;
  body: string;
}

/** A raw request: the path is sent as written, never normalized by a URL parser. */
function get(port: number, path: string, method = "GET"): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, method }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          type: res.headers["content-type"],
          location: res.headers.location,
          body: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

async function serve(site: StaticSite): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => void site.serve(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe("static site serving", () => {
  let port = 0;
  let spaPort = 0;
  const servers: Server[] = [];
  before(async () => {
    const outside = tempDir("slipway-outside-");
    writeFileSync(join(outside, "secret.txt"), "outside secret");
    const root = tempDir("slipway-site-");
    writeFileSync(join(root, "index.html"), "<h1>home</h1>");
    writeFileSync(join(root, "about.html"), "<h1>about</h1>");
    mkdirSync(join(root, "assets"));
    writeFileSync(join(root, "assets", "app.js"), "console.log(1)");
    writeFileSync(join(root, "assets", "style.css"), "body{}");
    writeFileSync(join(root, "logo.svg"), "<svg/>");
    mkdirSync(join(root, "docs"));
    writeFileSync(join(root, "docs", "index.html"), "<h1>docs</h1>");
    writeFileSync(join(root, ".env"), "SECRET=1");
    symlinkSync(join(outside, "secret.txt"), join(root, "link.txt"));
    symlinkSync(outside, join(root, "out"));
    writeFileSync(join(root, "inside-link-target.txt"), "inside");
    symlinkSync("inside-link-target.txt", join(root, "inside-link.txt"));
    const plain = await serve(new StaticSite(root, false));
    const spa = await serve(new StaticSite(root, true));
    servers.push(plain.server, spa.server);
    port = plain.port;
    spaPort = spa.port;
  });
  after(async () => {
    for (const s of servers) await new Promise((r) => s.close(r));
    cleanupTemp();
  });

  it("index.html for /, files with their Content-Type, page.html for /page, a directory's index", async () => {
    const home = await get(port, "/");
    assert.deepEqual([home.status, home.type, home.body], [200, "text/html; charset=utf-8", "<h1>home</h1>"]);
    assert.equal((await get(port, "/assets/app.js")).type, "text/javascript; charset=utf-8");
    assert.equal((await get(port, "/assets/style.css")).type, "text/css; charset=utf-8");
    assert.equal((await get(port, "/logo.svg")).type, "image/svg+xml");
    assert.equal((await get(port, "/about")).body, "<h1>about</h1>");
    assert.equal((await get(port, "/docs/")).body, "<h1>docs</h1>");
    const redirect = await get(port, "/docs?x=1");
    assert.deepEqual([redirect.status, redirect.location], [301, "/docs/?x=1"]);
    assert.equal((await get(port, "/index.html?cache=bust")).body, "<h1>home</h1>");
    assert.equal(
      (await get(port, "/inside-link.txt")).body,
      "inside",
      "a symlink inside the root is followed",
    );
    const head = await get(port, "/", "HEAD");
    assert.deepEqual([head.status, head.body], [200, ""]);
    assert.equal((await get(port, "/", "POST")).status, 405);
  });

  it("a missing file is 404", async () => {
    const missing = await get(port, "/nope.js");
    assert.equal(missing.status, 404);
    assert.match(missing.body, /No file at \/nope\.js/);
    assert.equal((await get(port, "/client/route")).status, 404, "no index.html fallback unless a SPA");
  });

  it("nothing outside the root: .., encoded .., symlinks out, dotfiles", async () => {
    for (const path of [
      "/../secret.txt",
      "/assets/../../secret.txt",
      "/%2e%2e/secret.txt",
      "/assets/%2E%2E/%2e%2e/secret.txt",
      "/..%2fsecret.txt",
      "/..%5csecret.txt",
      "/link.txt",
      "/out/secret.txt",
      "/.env",
      "/%2eenv",
      "/%00",
      "/%E0%A4%A",
    ]) {
      const got = await get(port, path);
      assert.ok(got.status === 404 || got.status === 400, `${path}: ${got.status}`);
      assert.doesNotMatch(got.body, /outside secret|SECRET=1/, path);
    }
  });

  it("a single-page app answers a missing path without an extension with index.html; a missing asset is 404", async () => {
    const route = await get(spaPort, "/client/route");
    assert.deepEqual([route.status, route.body], [200, "<h1>home</h1>"]);
    assert.equal((await get(spaPort, "/missing.js")).status, 404);
    assert.equal((await get(spaPort, "/../secret.txt")).body.includes("outside"), false);
    assert.equal((await get(spaPort, "/.env")).status, 404, "a dotfile is never the SPA's index either");
  });
});
