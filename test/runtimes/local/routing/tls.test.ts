// Why over 300 lines: one HTTPS listener suite against real apps (each case needs the same runtime, CA and app).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { connect as h2connect } from "node:http2";
import { request as httpsRequest } from "node:https";
import { connect as netConnect } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { RevisionSpec } from "../../../../src/runtimes/interface.ts";
import { FileCertificates } from "../../../../src/runtimes/local/routing/tls-files.ts";
import type { LocalRuntime } from "../../../../src/runtimes/local/runtime.ts";
import {
  cleanupTemp,
  DOMAIN,
  newRuntime,
  phase,
  quietLogger,
  spec,
  tempDir,
  waitFor,
  writeApp,
} from "../../../helpers/local-runtime.ts";
import { h2Get, handshake, httpsGet } from "../../../helpers/tls-client.ts";

/**
 * The apps edge's HTTPS listener (routing/tls.ts) in files mode (routing/tls-files.ts), in front
 * of real app processes: HTTP/1.1 and HTTP/2, the plain port's redirect, upgrades and streams,
 * a deploy under load, a cold start, and bad clients. Certificates come from a CA made here.
 */

const HANDSHAKE_TIMEOUT_MS = 600;

/** An app that tells what the edge passed on, streams events at /sse and echoes upgrades. */
const APP_JS = `
const http = require("node:http");
const VERSION = "__VERSION__";
const server = http.createServer((req, res) => {
  if (req.url === "/sse") {
    res.writeHead(200, { "content-type": "text/event-stream" });
    let n = 0;
    const t = setInterval(() => { res.write("data: " + (++n) + "\\n\\n"); if (n === 3) { clearInterval(t); res.end(); } }, 50);
    return;
  }
  if (req.url === "/echo") {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => res.end("got " + Buffer.concat(chunks).toString()));
    return;
  }
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ version: VERSION, pid: process.pid, proto: req.headers["x-forwarded-proto"],
    host: req.headers.host, forwardedHost: req.headers["x-forwarded-host"] }));
});
server.on("upgrade", (req, socket) => {
  socket.write("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\nX-Proto: " + req.headers["x-forwarded-proto"] + "\\r\\n\\r\\n");
  socket.on("data", (d) => socket.write("echo:" + d));
});
server.listen(Number(process.env.PORT), "127.0.0.1");
`;

function appDir(version: string): string {
  return writeApp(tempDir(), {
    config: { start: "node app.js", healthcheck: "/" },
    extra: { "app.js": APP_JS.replace("__VERSION__", version) },
  });
}

const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: "pipe" });

/** A CA of the test's own, and `<host>.crt`/`<host>.key` it signs into `dir`. */
function makeCa(dir: string): { pem: string; sign(host: string): void } {
  const caKey = join(dir, "ca.key.pem");
  const caCrt = join(dir, "ca.crt.pem");
  openssl(
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    caKey,
    "-out",
    caCrt,
    "-days",
    "2",
    "-subj",
    "/CN=Slipway test CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign",
  );
  return {
    pem: readFileSync(caCrt, "utf8"),
    sign(host) {
      const csr = join(dir, `${host}.csr.pem`);
      const ext = join(dir, `${host}.ext`);
      writeFileSync(ext, `subjectAltName=DNS:${host}\n`);
      openssl(
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        join(dir, `${host}.key`),
        "-out",
        csr,
        "-subj",
        `/CN=${host}`,
      );
      openssl(
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        caCrt,
        "-CAkey",
        caKey,
        "-set_serial",
        `0x${Date.now().toString(16)}`,
        "-out",
        join(dir, `${host}.crt`),
        "-days",
        "1",
        "-extfile",
        ext,
      );
    },
  };
}

interface Raw {
  status: number;
  location: string | undefined;
}

function plainGet(port: number, host: string, path: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers: { host } }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Resolves when the server closes the socket (or after `ms`, with false). */
function closedWithin(socket: import("node:net").Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(true);
    });
    socket.on("error", () => {});
  });
}

describe("apps edge: HTTPS listener (files mode)", () => {
  let rt: LocalRuntime;
  let ca: ReturnType<typeof makeCa>;
  let certDir: string;
  let tlsPort = 0;
  let v1: RevisionSpec;
  let host = "";

  before(async () => {
    certDir = tempDir("slipway-tls-");
    ca = makeCa(certDir);
    rt = newRuntime(tempDir(), {
      scaling: { idleScaleDownMs: 400, tickMs: 100 },
      tls: {
        port: 0,
        certificates: new FileCertificates(certDir, quietLogger),
        handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
        logger: quietLogger,
      },
    });
    v1 = spec({ kind: "directory", path: appDir("v1") });
    host = `${v1.deploymentName}.${DOMAIN}`;
    ca.sign(host);
    const ctx = phase();
    await rt.prepare(v1, ctx);
    await rt.build(v1, ctx);
    await rt.activate(v1, phase());
    tlsPort = rt.tlsPort ?? 0;
    assert.ok(tlsPort > 0);
  });
  after(async () => {
    await rt.close();
    cleanupTemp();
  });

  it("serves HTTP/1.1 and HTTP/2 (by ALPN) to the app, marked x-forwarded-proto: https", async () => {
    const [h1, h2] = await Promise.all([httpsGet(tlsPort, host, ca.pem), h2Get(tlsPort, host, ca.pem)]);
    assert.equal(h1.status, 200);
    assert.equal(h1.alpn, "http/1.1");
    assert.equal(h2.status, 200);
    assert.equal(h2.alpn, "h2");
    for (const answer of [h1, h2]) {
      const body = JSON.parse(answer.body) as Record<string, string>;
      assert.equal(body.proto, "https");
      assert.equal(body.version, "v1");
      // HTTP/2's :authority is the app's Host.
      assert.equal(body.host, `${host}:${tlsPort}`);
    }
    // A request body over HTTP/2, which needs no content-length, reaches the app whole.
    const posted = await new Promise<string>((resolve, reject) => {
      const session = h2connect(`https://127.0.0.1:${tlsPort}`, { servername: host, ca: ca.pem });
      session.on("error", reject);
      const stream = session.request({ ":method": "POST", ":path": "/echo", ":authority": host });
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        session.close();
        resolve(Buffer.concat(chunks).toString());
      });
      stream.on("error", reject);
      stream.write("part one, ");
      setTimeout(() => stream.end("part two"), 50);
    });
    assert.equal(posted, "got part one, part two");
    // A client cannot claim plain HTTP was HTTPS, nor the reverse.
    const spoofed = await httpsGet(tlsPort, host, ca.pem, "/", { "x-forwarded-proto": "http" });
    assert.equal((JSON.parse(spoofed.body) as Record<string, string>).proto, "https");
    // A host the edge does not serve, with a certificate: 404 over TLS too.
    ca.sign(`other.${DOMAIN}`);
    assert.equal((await h2Get(tlsPort, `other.${DOMAIN}`, ca.pem)).status, 404);
  });

  it("redirects plain HTTP to HTTPS with 308; the ACME challenge path is a 404, not a redirect", async () => {
    const r = await plainGet(rt.appsPort, `${host}:${rt.appsPort}`, "/a/b?c=d");
    assert.equal(r.status, 308);
    assert.equal(r.location, `https://${host}:${tlsPort}/a/b?c=d`);
    const challenge = await plainGet(
      rt.appsPort,
      `${host}:${rt.appsPort}`,
      "/.well-known/acme-challenge/abc",
    );
    assert.deepEqual(challenge, { status: 404, location: undefined });
  });

  it("picks up a replaced certificate file on the next connection", async () => {
    const before = await handshake(tlsPort, host, ca.pem);
    assert.ok(before.ok);
    await new Promise((r) => setTimeout(r, 20));
    ca.sign(host);
    const afterChange = await handshake(tlsPort, host, ca.pem);
    assert.ok(afterChange.ok);
    assert.notEqual(afterChange.cert.serialNumber, before.cert.serialNumber);
    assert.equal((await httpsGet(tlsPort, host, ca.pem)).status, 200);
  });

  it("passes WebSocket-style upgrades (HTTP/1.1) and server-sent events (HTTP/1.1 and HTTP/2) over TLS", async () => {
    const reply = await new Promise<{ proto: string; echo: string }>((resolve, reject) => {
      const req = httpsRequest({
        host: "127.0.0.1",
        port: tlsPort,
        servername: host,
        ca: ca.pem,
        agent: false,
        headers: { host, connection: "Upgrade", upgrade: "echo" },
      });
      req.on("upgrade", (res, socket) => {
        socket.once("data", (d: Buffer) => {
          resolve({ proto: String(res.headers["x-proto"]), echo: d.toString() });
          socket.destroy();
        });
        socket.write("ping");
      });
      req.on("error", reject);
      req.end();
    });
    assert.deepEqual(reply, { proto: "https", echo: "echo:ping" });
    const [h1, h2] = await Promise.all([
      httpsGet(tlsPort, host, ca.pem, "/sse"),
      h2Get(tlsPort, host, ca.pem, "/sse"),
    ]);
    for (const sse of [h1, h2]) {
      assert.equal(sse.status, 200);
      assert.match(String(sse.headers["content-type"]), /text\/event-stream/, sse.body);
      assert.equal(sse.body, "data: 1\n\ndata: 2\n\ndata: 3\n\n");
    }
  });

  it("no request over TLS fails while a new revision takes over", async () => {
    const v2: RevisionSpec = {
      ...v1,
      revisionId: `${v1.revisionId}-v2`,
      source: { kind: "directory", path: appDir("v2") },
    };
    const ctx = phase();
    await rt.prepare(v2, ctx);
    await rt.build(v2, ctx);
    const session = h2connect(`https://127.0.0.1:${tlsPort}`, { servername: host, ca: ca.pem });
    const h2once = () =>
      new Promise<{ status: number; version: string }>((resolve, reject) => {
        const stream = session.request({ ":path": "/", ":authority": host });
        let status = 0;
        const chunks: Buffer[] = [];
        stream.on("response", (h) => {
          status = Number(h[":status"]);
        });
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () =>
          resolve({
            status,
            version: (JSON.parse(Buffer.concat(chunks).toString()) as { version: string }).version,
          }),
        );
        stream.on("error", reject);
        stream.end();
      });
    let stop = false;
    const seen: { status: number; version: string }[] = [];
    const failures: string[] = [];
    const loop = async (one: () => Promise<{ status: number; version: string }>) => {
      while (!stop) {
        try {
          seen.push(await one());
        } catch (err) {
          failures.push(String(err));
        }
      }
    };
    const h1once = async () => {
      const a = await httpsGet(tlsPort, host, ca.pem);
      return { status: a.status, version: (JSON.parse(a.body) as { version: string }).version };
    };
    const loops = [loop(h2once), loop(h2once), loop(h1once)];
    await new Promise((r) => setTimeout(r, 200));
    await rt.activate(v2, phase());
    await waitFor("v2 to answer", () => seen.at(-1)?.version === "v2", 10_000);
    await new Promise((r) => setTimeout(r, 200));
    stop = true;
    await Promise.all(loops);
    session.close();
    assert.deepEqual(failures, []);
    assert.ok(seen.length > 20, `requests made: ${seen.length}`);
    assert.deepEqual(
      seen.filter((s) => s.status !== 200),
      [],
    );
    v1 = v2;
  });

  it("refuses bad clients cleanly and keeps serving: garbage, a slow handshake, oversized headers, unknown names", async () => {
    // Garbage where a ClientHello should be: the connection is closed.
    const garbage = netConnect(tlsPort, "127.0.0.1");
    const garbageClosed = closedWithin(garbage, 5000);
    garbage.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n\u0000\u0001\u0002");
    assert.equal(await garbageClosed, true);
    // A client that connects and never finishes its handshake is cut at the handshake timeout.
    const slow = netConnect(tlsPort, "127.0.0.1");
    const started = Date.now();
    assert.equal(await closedWithin(slow, 10_000), true);
    const took = Date.now() - started;
    assert.ok(took >= HANDSHAKE_TIMEOUT_MS - 100 && took < 5000, `cut after ${took} ms`);
    // Oversized headers: 431 over HTTP/1.1; over HTTP/2 the stream (not the edge) is refused.
    const big = await httpsGet(tlsPort, host, ca.pem, "/", { "x-big": "a".repeat(70_000) }).catch(
      (err: Error) => ({ status: -1, body: err.message }),
    );
    assert.equal(big.status, 431, `oversized headers: ${big.body}`);
    const h2big = await new Promise<string>((resolve) => {
      const session = h2connect(`https://127.0.0.1:${tlsPort}`, { servername: host, ca: ca.pem });
      session.on("error", (err) => resolve(`session: ${err.message}`));
      const stream = session.request({ ":path": "/", ":authority": host, "x-big": "a".repeat(70_000) });
      stream.on("response", (h) => resolve(`status ${String(h[":status"])}`));
      stream.on("error", (err) => resolve(`stream: ${err.message}`));
      stream.on("close", () => {
        resolve("closed");
        session.close();
      });
      stream.end();
    });
    assert.match(h2big, /REFUSED_STREAM|status 431/);
    // Names without a certificate, and no name at all: the handshake fails.
    assert.equal((await handshake(tlsPort, `nobody.${DOMAIN}`, ca.pem)).ok, false);
    assert.equal((await handshake(tlsPort, "../../etc/passwd", ca.pem)).ok, false);
    // Through all of it the edge kept serving.
    assert.equal((await httpsGet(tlsPort, host, ca.pem)).status, 200);
    assert.equal((await h2Get(tlsPort, host, ca.pem)).status, 200);
  });

  it("serves a cold start from zero over TLS", async () => {
    const cold = spec(
      { kind: "directory", path: appDir("cold") },
      { resourceSpec: { min_scale: 0, max_scale: 1 } },
    );
    const coldHost = `${cold.deploymentName}.${DOMAIN}`;
    ca.sign(coldHost);
    const ctx = phase();
    await rt.prepare(cold, ctx);
    await rt.build(cold, ctx);
    await rt.activate(cold, phase());
    await waitFor(
      "the app to scale to zero",
      async () => (await rt.processes(cold.deploymentId)).filter((p) => p.type === "api").length === 0,
      20_000,
    );
    const answer = await h2Get(tlsPort, coldHost, ca.pem);
    assert.equal(answer.status, 200, answer.body);
    assert.equal((JSON.parse(answer.body) as { version: string }).version, "cold");
  });
});
