import assert from "node:assert/strict";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { connect, type Socket } from "node:net";
import { it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { within } from "../helpers/eventually.ts";
import { createTestContext, type TestContext } from "../helpers/harness.ts";

/** Closing the app must not wait on connections that never sent a request. */

async function listening(): Promise<{ ctx: TestContext; port: number }> {
  const ctx = await createTestContext("pglite");
  await ctx.app.listen({ port: 0, host: "127.0.0.1" });
  return { ctx, port: (ctx.app.server.address() as AddressInfo).port };
}

async function opened(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => {});
  await once(socket, "connect");
  // The server has accepted it once its connection event ran; a short pause lets it.
  await sleep(50);
  return socket;
}

it("a connection opened ahead of a request is closed at once, and the app's close is not held", async () => {
  const { ctx, port } = await listening();
  const early = await opened(port);
  const closedSocket = once(early, "close");
  try {
    // Without the hook Node holds the close until its headers timeout (10 s here) or the client.
    await within(ctx.app.close(), 3000, "closing the app");
    await within(closedSocket, 1000, "the early connection's close");
  } finally {
    early.destroy();
    await ctx.close();
  }
});

it("a request whose body is still arriving when the app closes is answered, not cut", async () => {
  const { ctx, port } = await listening();
  const socket = await opened(port);
  let received = "";
  socket.on("data", (d: Buffer) => {
    received += d.toString("utf8");
  });
  const body = JSON.stringify({ name: "late-body" });
  try {
    socket.write(
      "POST /v1/workspaces HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n" +
        `x-api-key: ${ctx.keys.admin}\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await sleep(100);
    const closing = ctx.app.close();
    await sleep(100);
    socket.write(body.slice(5));
    await within(closing, 5000, "closing the app");
    await within(once(socket, "close"), 1000, "the connection's close");
    assert.match(received, /^HTTP\/1\.1 201 /, received);
    assert.match(received, /\r\nconnection: close\r\n/i, "the answer tells the client not to reuse it");
  } finally {
    socket.destroy();
    await ctx.close();
  }
});

it("an open event stream ends when the app closes", async () => {
  const { ctx, port } = await listening();
  const res = await fetch(`http://127.0.0.1:${port}/v2/events`, { headers: ctx.headers(ctx.keys.admin) });
  assert.equal(res.status, 200);
  const reader = res.body?.getReader();
  assert.ok(reader);
  await reader.read();
  try {
    await within(ctx.app.close(), 3000, "closing the app");
    for (;;) if ((await within(reader.read(), 1000, "the stream's end")).done) break;
  } finally {
    await reader.cancel().catch(() => {});
    await ctx.close();
  }
});

it("an event stream whose client stopped reading does not hold the app's close", async () => {
  const { ctx, port } = await listening();
  // What a proxy whose own client left does: the upstream socket open, paused, never ended.
  const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
  socket.on("error", () => {});
  await once(socket, "connect");
  socket.write(`GET /v2/events HTTP/1.1\r\nhost: x\r\nx-api-key: ${ctx.keys.admin}\r\n\r\n`);
  const [head] = (await once(socket, "data")) as [Buffer];
  assert.match(head.toString("utf8"), /^HTTP\/1\.1 200 /);
  socket.pause();
  try {
    await within(ctx.app.close(), 5000, "closing the app");
  } finally {
    socket.destroy();
    await ctx.close();
  }
});
