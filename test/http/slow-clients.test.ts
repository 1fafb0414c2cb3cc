import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { connect, type Socket } from "node:net";
import { describe, it } from "node:test";
import { loadConfig } from "../../src/config/load.ts";
import { ConfigError } from "../../src/config.ts";
import { forEachDatabase, type SuiteHandle } from "../helpers/harness.ts";

/** Item 16: slow clients are closed. A real listening server and raw sockets that dribble. */

interface Outcome {
  /** What the server wrote before closing. */
  received: string;
  /** Milliseconds from connecting to the close. */
  closedAfterMs: number;
}

/** Connects, writes `chunks` one every `everyMs`, and resolves when the server closes the socket. */
function dribble(port: number, head: string, chunks: string[], everyMs: number, giveUpMs = 20_000) {
  return new Promise<Outcome>((resolve, reject) => {
    const started = Date.now();
    const socket: Socket = connect(port, "127.0.0.1");
    let received = "";
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${giveUpMs} ms; got: ${received}`));
    }, giveUpMs);
    socket.on("data", (d) => {
      received += d.toString("utf8");
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ received, closedAfterMs: Date.now() - started });
    });
    socket.on("connect", () => {
      socket.write(head);
      let i = 0;
      timer = setInterval(() => {
        if (socket.destroyed) return;
        socket.write(chunks[i % chunks.length] ?? "x");
        i++;
      }, everyMs);
    });
  });
}

async function listen(suite: SuiteHandle): Promise<number> {
  const app = suite.ctx.app;
  if (!app.server.listening) await app.listen({ port: 0, host: "127.0.0.1" });
  return (app.server.address() as AddressInfo).port;
}

forEachDatabase(
  "slow clients are closed",
  (suite) => {
    it("headers that do not arrive within SLIPWAY_HEADERS_TIMEOUT_MS → 408 and the connection closed", async () => {
      const port = await listen(suite);
      const out = await dribble(port, "GET /ok HTTP/1.1\r\nHost: x\r\n", ["X-Slow: a\r\n"], 150);
      assert.match(out.received, /^HTTP\/1\.1 408/);
      assert.ok(out.closedAfterMs < 5000, `closed after ${out.closedAfterMs} ms`);
    });

    it("a body slower than SLIPWAY_MIN_BODY_BYTES_PER_SECOND is cut off after the grace period", async () => {
      const port = await listen(suite);
      const key = suite.ctx.keys.admin;
      const head =
        `POST /v1/workspaces HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\n` +
        "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
      const out = await dribble(port, head, ['{"name": "slow"'], 200);
      assert.ok(out.closedAfterMs >= 1000, `closed after ${out.closedAfterMs} ms, before the grace`);
      assert.ok(out.closedAfterMs < 6000, `closed after ${out.closedAfterMs} ms`);
      assert.doesNotMatch(out.received, /HTTP\/1\.1 201/);
    });

    it("a client at a normal pace is served over the same listener", async () => {
      const port = await listen(suite);
      const res = await fetch(`http://127.0.0.1:${port}/v1/workspaces`, {
        method: "POST",
        headers: { "x-api-key": suite.ctx.keys.admin, "content-type": "application/json" },
        body: JSON.stringify({ name: "quick" }),
      });
      assert.equal(res.status, 201);
    });
  },
  {
    env: {
      SLIPWAY_HEADERS_TIMEOUT_MS: "500",
      SLIPWAY_MIN_BODY_BYTES_PER_SECOND: "1000",
      SLIPWAY_BODY_GRACE_MS: "1000",
    },
  },
);

forEachDatabase(
  "the whole request within SLIPWAY_REQUEST_TIMEOUT_MS",
  (suite) => {
    it("a body still arriving when the request timeout passes → 408 and closed", async () => {
      const port = await listen(suite);
      const head =
        `POST /v1/workspaces HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${suite.ctx.keys.admin}\r\n` +
        "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
      // Fast enough for any minimum rate (that check is off here), but never finished.
      const out = await dribble(port, head, ["x".repeat(2000)], 100);
      assert.match(out.received, /^HTTP\/1\.1 408/);
      assert.ok(out.closedAfterMs < 8000, `closed after ${out.closedAfterMs} ms`);
    });
  },
  {
    env: {
      SLIPWAY_HEADERS_TIMEOUT_MS: "1000",
      SLIPWAY_REQUEST_TIMEOUT_MS: "2000",
      SLIPWAY_MIN_BODY_BYTES_PER_SECOND: "0",
    },
  },
);

describe("timeout configuration", () => {
  it("defaults, and bad values stop start-up naming the variable", () => {
    const c = loadConfig({});
    assert.deepEqual(c.timeouts, {
      headersMs: 10_000,
      requestMs: 300_000,
      minBodyBytesPerSecond: 1024,
      bodyGraceMs: 10_000,
    });
    assert.equal(c.authFailLimitPerMinute, 30);
    assert.throws(() => loadConfig({ SLIPWAY_HEADERS_TIMEOUT_MS: "soon" }), /SLIPWAY_HEADERS_TIMEOUT_MS/);
    assert.throws(() => loadConfig({ SLIPWAY_REQUEST_TIMEOUT_MS: "10" }), /SLIPWAY_REQUEST_TIMEOUT_MS/);
    assert.throws(
      () => loadConfig({ SLIPWAY_HEADERS_TIMEOUT_MS: "60000", SLIPWAY_REQUEST_TIMEOUT_MS: "30000" }),
      (err: unknown) =>
        err instanceof ConfigError && /must not exceed SLIPWAY_REQUEST_TIMEOUT_MS/.test(err.message),
    );
    assert.throws(() => loadConfig({ SLIPWAY_AUTH_FAIL_LIMIT_PER_MINUTE: "-1" }), /SLIPWAY_AUTH_FAIL_LIMIT/);
    assert.throws(() => loadConfig({ SLIPWAY_MIN_BODY_BYTES_PER_SECOND: "1.5" }), /SLIPWAY_MIN_BODY/);
    assert.equal(loadConfig({ SLIPWAY_MIN_BODY_BYTES_PER_SECOND: "0" }).timeouts.minBodyBytesPerSecond, 0);
  });
});
