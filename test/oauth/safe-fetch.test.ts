import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { refusedAddressReason } from "../../src/oauth/address-policy.ts";
import { createSafeFetch, FetchFailed, FetchRefused } from "../../src/oauth/safe-fetch.ts";
import { urlProblem } from "../../src/oauth/url-policy.ts";

/** A loopback server whose paths each answer one way; it records what reached it. */
function startServer(): Promise<{ server: Server; origin: string; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? "/";
    hits.push(`${req.method} ${path}`);
    const port = (server.address() as AddressInfo).port;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const echo = () =>
        JSON.stringify({
          method: req.method,
          body: Buffer.concat(chunks).toString(),
          authorization: req.headers.authorization ?? null,
        });
      if (path === "/ok") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(echo());
      } else if (path === "/redirect-ok") {
        res.writeHead(302, { location: "/ok" });
        res.end();
      } else if (path === "/redirect-private") {
        res.writeHead(302, { location: "http://10.1.2.3/internal" });
        res.end();
      } else if (path === "/redirect-metadata") {
        res.writeHead(307, { location: "http://169.254.169.254/latest/meta-data/" });
        res.end();
      } else if (path === "/redirect-https-private") {
        res.writeHead(301, { location: "https://192.168.1.1/" });
        res.end();
      } else if (path.startsWith("/loop")) {
        const n = Number(path.slice(5) || "0");
        res.writeHead(302, { location: `/loop${n + 1}` });
        res.end();
      } else if (path === "/see-other") {
        res.writeHead(303, { location: "/ok" });
        res.end();
      } else if (path === "/cross-origin") {
        res.writeHead(302, { location: `http://localhost:${port}/ok` });
        res.end();
      } else if (path === "/huge") {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        const block = Buffer.alloc(64 * 1024, 97);
        for (let i = 0; i < 40; i++) res.write(block);
        res.end();
      } else if (path === "/silent") {
        // Never answers: the caller's time limit has to end it.
      } else {
        res.writeHead(404);
        res.end();
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      resolve({ server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits });
    }),
  );
}

describe("SSRF-safe fetch", () => {
  let srv: Awaited<ReturnType<typeof startServer>>;
  before(async () => {
    srv = await startServer();
  });
  after(async () => {
    srv.server.closeAllConnections();
    await new Promise<void>((resolve) => srv.server.close(() => resolve()));
  });

  const loopbackFetch = () => createSafeFetch({ allowLoopback: true, timeoutMs: 2000 });
  const strictFetch = () => createSafeFetch({ allowLoopback: false, timeoutMs: 2000 });

  async function refused(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
    await assert.rejects(promise, (err: unknown) => {
      assert.ok(err instanceof FetchRefused, `expected a refusal, got ${String(err)}`);
      assert.match(err.message, pattern);
      return true;
    });
  }

  it("address rules: private, CGNAT, link-local, metadata, multicast, unspecified; loopback only when allowed", () => {
    const refusedEither = [
      ["10.1.2.3", /private/],
      ["172.16.0.1", /private/],
      ["192.168.0.10", /private/],
      ["100.64.0.1", /CGNAT/],
      ["169.254.1.1", /link-local/],
      ["169.254.169.254", /metadata/],
      ["fd00:ec2::254", /metadata/],
      ["::ffff:169.254.169.254", /metadata/],
      ["::ffff:10.0.0.1", /private/],
      ["::ffff:a00:1", /private/],
      ["fc00::1", /private/],
      ["fe80::1", /link-local/],
      ["224.0.0.251", /multicast/],
      ["ff02::1", /multicast/],
      ["0.0.0.0", /unspecified/],
      ["::", /unspecified/],
      ["255.255.255.255", /reserved|broadcast/],
    ] as const;
    for (const [ip, why] of refusedEither) {
      for (const allowLoopback of [false, true]) {
        const reason = refusedAddressReason(ip, allowLoopback);
        assert.ok(reason !== null && why.test(reason), `${ip} (loopback ${allowLoopback}): ${reason}`);
      }
    }
    for (const ip of ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"]) {
      assert.match(refusedAddressReason(ip, false) ?? "", /loopback/, ip);
      assert.equal(refusedAddressReason(ip, true), null, ip);
    }
    for (const ip of ["93.184.216.34", "2606:4700::1111", "8.8.8.8"]) {
      assert.equal(refusedAddressReason(ip, false), null, ip);
    }
  });

  it("URL rules for stored settings", () => {
    assert.equal(urlProblem("https://example.com/x", false), null);
    assert.match(urlProblem("http://example.com/x", true) ?? "", /https/);
    assert.match(urlProblem("http://127.0.0.1/x", false) ?? "", /SLIPWAY_OAUTH_ALLOW_INSECURE_LOOPBACK/);
    assert.equal(urlProblem("http://127.0.0.1/x", true), null);
    assert.equal(urlProblem("http://localhost:1/x", true), null);
    assert.equal(urlProblem("http://[::1]:1/x", true), null);
    assert.match(urlProblem("https://a:b@example.com/", false) ?? "", /user name/);
    assert.match(urlProblem("https://example.com/#x", false) ?? "", /fragment/);
    assert.match(urlProblem("javascript:alert(1)", true) ?? "", /https/);
    assert.match(urlProblem("example.com/x", true) ?? "", /absolute/);
  });

  it("refuses private, metadata and loopback addresses before connecting", async () => {
    const f = strictFetch();
    await refused(f("https://10.0.0.1/"), /private/);
    await refused(f("https://169.254.169.254/latest/meta-data/"), /metadata/);
    await refused(f("https://[fd00:ec2::254]/"), /metadata/);
    await refused(f("https://[::ffff:192.168.0.1]/"), /private/);
    await refused(f("https://100.100.100.200/"), /CGNAT/);
    await refused(f("https://0.0.0.0/"), /unspecified/);
    await refused(f("https://127.0.0.1:1/"), /loopback/);
    // A name is resolved and every address it has is checked.
    await refused(f("https://localhost:1/"), /localhost resolves to a loopback address/);
    await refused(loopbackFetch()("https://10.0.0.1/"), /private/);
  });

  it("refuses http unless loopback is allowed, and then only for loopback hosts", async () => {
    await refused(strictFetch()(`${srv.origin}/ok`), /only https/);
    await refused(loopbackFetch()("http://example.com/"), /only https/);
    await refused(loopbackFetch()("ftp://127.0.0.1/"), /only https/);
    await refused(loopbackFetch()("https://user:pw@127.0.0.1:1/"), /credentials/);
    assert.equal(srv.hits.length, 0, "nothing reached the server");
  });

  it("fetches from loopback when allowed, following redirects that stay allowed", async () => {
    const res = await loopbackFetch()(`${srv.origin}/redirect-ok`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { method: "GET", body: "", authorization: null });
    const viaName = await loopbackFetch()(`${srv.origin.replace("127.0.0.1", "localhost")}/ok`);
    assert.equal(viaName.status, 200);
  });

  it("re-checks every redirect hop", async () => {
    const f = loopbackFetch();
    await refused(f(`${srv.origin}/redirect-private`), /10\.1\.2\.3.*|only https/);
    await refused(f(`${srv.origin}/redirect-metadata`), /metadata|only https/);
    await refused(f(`${srv.origin}/redirect-https-private`), /private/);
    assert.ok(!srv.hits.some((h) => h.includes("internal")), "no hop to a refused address");
  });

  it("stops after 3 redirects", async () => {
    await assert.rejects(loopbackFetch()(`${srv.origin}/loop0`), (err: unknown) => {
      assert.ok(err instanceof FetchFailed);
      assert.match(err.message, /more than 3 redirects/);
      return true;
    });
  });

  it("303 turns a POST into a GET; credentials are not sent to another origin", async () => {
    const f = loopbackFetch();
    const seeOther = await f(`${srv.origin}/see-other`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic abc" },
      body: new URLSearchParams({ a: "1" }),
    });
    assert.deepEqual(await seeOther.json(), { method: "GET", body: "", authorization: "Basic abc" });
    const post = await f(`${srv.origin}/ok`, { method: "POST", body: "x=1" });
    assert.deepEqual(await post.json(), { method: "POST", body: "x=1", authorization: null });
    const cross = await f(`${srv.origin}/cross-origin`, { headers: { authorization: "Bearer t" } });
    assert.deepEqual(await cross.json(), { method: "GET", body: "", authorization: null });
  });

  it("limits the response size", async () => {
    const f = createSafeFetch({ allowLoopback: true, maxBytes: 1024 * 1024 });
    await assert.rejects(f(`${srv.origin}/huge`), (err: unknown) => {
      assert.ok(err instanceof FetchFailed);
      assert.match(err.message, /larger than 1048576 bytes/);
      return true;
    });
  });

  it("limits the time", async () => {
    const f = createSafeFetch({ allowLoopback: true, timeoutMs: 200 });
    await assert.rejects(f(`${srv.origin}/silent`), (err: unknown) => {
      assert.ok(err instanceof FetchFailed);
      assert.match(err.message, /timed out/);
      return true;
    });
  });

  it("reports a server that is down", async () => {
    await assert.rejects(loopbackFetch()("http://127.0.0.1:1/"), (err: unknown) => {
      assert.ok(err instanceof FetchFailed);
      assert.match(err.message, /connection refused/);
      return true;
    });
  });
});
