import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, describe, it } from "node:test";
import { DeployError } from "../../../src/runtimes/interface.ts";
import { takePort } from "../../../src/runtimes/local/processes/ports.ts";
import type { LocalRuntime } from "../../../src/runtimes/local/runtime.ts";
import {
  built,
  cleanupTemp,
  hit,
  newRuntime,
  phase,
  spec,
  tempDir,
  writeApp,
} from "../../helpers/local-runtime.ts";

/**
 * Apps that listen somewhere other than $PORT (real processes, unsandboxed; the sandboxed case is in
 * sandbox/sandbox.test.ts): the start fails after a short grace, not the health timeout, and says why.
 * The health timeout here is far longer than each test may take, so only the early verdict passes.
 */
const NEVER_MS = 300_000;
const WITHIN = { timeout: 60_000 };

/**
 * The "hard-coded" port of a broken app: free now, and handed out by the runtime's own allocator,
 * so no replica is given it as $PORT.
 */
const freePort = takePort;

/** Whether something listens on `port` on loopback now. */
function taken(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(true));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(false)));
  });
}

/** An app that prints its $PORT, then listens on `port` at `host` (its $PORT when port is "PORT"). */
function listenerJs(port: number | "PORT", host = "127.0.0.1", delayMs = 0): string {
  const p = port === "PORT" ? "Number(process.env.PORT)" : String(port);
  return `console.log("PORT=" + process.env.PORT);
setTimeout(() => require("node:http").createServer((q, r) => r.end("ok")).listen(${p}, ${JSON.stringify(host)}), ${delayMs});`;
}

/** The message of the DeployError `activation` fails with. */
async function failure(activation: Promise<unknown>): Promise<string> {
  let message = "";
  await assert.rejects(activation, (err: unknown) => {
    assert.ok(err instanceof DeployError, String(err));
    message = err.message;
    return true;
  });
  return message;
}

function givenPort(lines: string[]): number {
  const line = lines.find((l) => l.startsWith("PORT="));
  assert.ok(line, lines.join("\n"));
  return Number(line.slice(5));
}

describe("local runtime: an app that does not listen on $PORT", () => {
  const runtimes: LocalRuntime[] = [];
  const runtime = (healthTimeoutMs = NEVER_MS) => {
    const rt = newRuntime(tempDir(), { healthTimeoutMs });
    runtimes.push(rt);
    return rt;
  };
  after(async () => {
    await Promise.all(runtimes.map((r) => r.close()));
    cleanupTemp();
  });

  it(
    "a hard-coded port fails soon, naming it and $PORT; the serving revision keeps serving",
    WITHIN,
    async () => {
      const rt = runtime();
      const good = spec({ kind: "directory", path: writeApp(tempDir()) });
      await built(rt, good);
      await rt.activate(good, phase());

      const wrong = await freePort();
      const src = writeApp(tempDir(), {
        config: { start: "node wrong.js", healthcheck: "/" },
        extra: { "wrong.js": listenerJs(wrong) },
      });
      const next = spec(
        { kind: "directory", path: src },
        { deploymentId: good.deploymentId, deploymentName: good.deploymentName, revisionId: "rev-next" },
      );
      await built(rt, next);
      const ctx = phase();
      const message = await failure(rt.activate(next, ctx));
      const port = givenPort(ctx.lines.deploy);
      assert.notEqual(port, wrong);
      assert.equal(
        message,
        `process web.1 listens on port ${wrong}, not on $PORT (${port}): make it listen on the port in the PORT environment variable`,
      );
      assert.ok(ctx.lines.deploy.includes(`error: ${message}`), ctx.text("deploy"));
      assert.equal(await taken(wrong), false, "the failed process was stopped");
      const served = await hit(rt, good.deploymentName);
      assert.equal(served.status, 200);
      assert.equal(served.json().version, "v1");
    },
  );

  it(
    "a wrong port opened by a grandchild of the start command (a shell's node) counts too",
    WITHIN,
    async () => {
      const rt = runtime();
      const wrong = await freePort();
      const src = writeApp(tempDir(), {
        // `; true` keeps the shell as node's parent instead of exec'ing it.
        config: { start: "sh -c 'node wrong.js; true'", healthcheck: "/" },
        extra: { "wrong.js": listenerJs(wrong, "0.0.0.0") },
      });
      const s = spec({ kind: "directory", path: src });
      await built(rt, s);
      const ctx = phase();
      assert.match(
        await failure(rt.activate(s, ctx)),
        new RegExp(`^process web\\.1 listens on port ${wrong}, not on \\$PORT \\(\\d+\\)`),
      );
    },
  );

  it("an app that listens on nothing fails at the timeout saying it never listened on $PORT", async () => {
    const rt = runtime(1500);
    const src = writeApp(tempDir(), {
      config: { start: "node idle.js", healthcheck: "/" },
      extra: { "idle.js": `console.log("PORT=" + process.env.PORT); setInterval(() => {}, 1000);` },
    });
    const s = spec({ kind: "directory", path: src });
    await built(rt, s);
    const ctx = phase();
    const message = await failure(rt.activate(s, ctx));
    assert.equal(
      message,
      `process web.1 did not listen on $PORT (${givenPort(ctx.lines.deploy)}) within 1.5 s`,
    );
  });

  it(
    "an app on $PORT but only on ::1 (Node's 'localhost' on some machines) fails soon, naming the address",
    WITHIN,
    async (t) => {
      const v6 = await new Promise<boolean>((resolve) => {
        const server = createServer();
        server.once("error", () => resolve(false));
        server.listen(0, "::1", () => server.close(() => resolve(true)));
      });
      if (!v6) {
        t.skip("no IPv6 loopback here");
        return;
      }
      const rt = runtime();
      const src = writeApp(tempDir(), {
        config: { start: "node six.js", healthcheck: "/" },
        extra: { "six.js": listenerJs("PORT", "::1") },
      });
      const s = spec({ kind: "directory", path: src });
      await built(rt, s);
      const ctx = phase();
      const message = await failure(rt.activate(s, ctx));
      assert.equal(
        message,
        `process web.1 listens on $PORT (${givenPort(ctx.lines.deploy)}) only on ::1, where Slipway does not connect: make it listen on 127.0.0.1 or on all interfaces (0.0.0.0)`,
      );
    },
  );

  it("an app that opens another port first and $PORT a moment later deploys", WITHIN, async () => {
    const rt = runtime();
    const side = await freePort();
    const src = writeApp(tempDir(), {
      config: { start: "node two.js", healthcheck: "/" },
      extra: {
        "two.js": `${listenerJs(side)}\n${listenerJs("PORT", "127.0.0.1", 800)}`,
      },
    });
    const s = spec({ kind: "directory", path: src });
    await built(rt, s);
    await rt.activate(s, phase());
    assert.equal((await hit(rt, s.deploymentName)).body, "ok");
  });

  it("an app on $PORT whose health path fails keeps the health check's own reason", async () => {
    const rt = runtime(1000);
    const src = writeApp(tempDir(), {
      config: { start: "node sick.js", healthcheck: "/healthz" },
      extra: {
        "sick.js": `require("node:http").createServer((q, r) => { r.statusCode = 503; r.end(); }).listen(Number(process.env.PORT), "127.0.0.1");`,
      },
    });
    const s = spec({ kind: "directory", path: src });
    await built(rt, s);
    assert.match(
      await failure(rt.activate(s, phase())),
      /^process web\.1 did not answer GET \/healthz with a status below 500 within 1000 ms \(last: status 503\)$/,
    );
  });
});
