import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ListeningSocket } from "../../../src/runtimes/local/listening-ports.ts";
import { PortCheck, type ProbeOrigin, reachable, seconds } from "../../../src/runtimes/local/port-check.ts";

/** The decision over what a starting app listens on, on a clock and /proc readings the test sets. */

const PORT = 41237;

function fixture(origin: ProbeOrigin = "loopback", root: () => number | undefined = () => 1234) {
  const state = {
    t: 0,
    reads: 0,
    roots: [] as number[],
    sockets: [] as ListeningSocket[] | undefined,
  };
  const check = new PortCheck({
    port: PORT,
    origin,
    root: async () => root(),
    graceMs: 2000,
    now: () => state.t,
    sample: async (pid) => {
      state.reads++;
      state.roots.push(pid);
      return state.sockets;
    },
  });
  return { state, check };
}

const on = (port: number, address = "0.0.0.0"): ListeningSocket => ({ address, port });

describe("port check", () => {
  it("an app on another port fails once the grace has passed, naming that port and $PORT", async () => {
    const { state, check } = fixture();
    state.sockets = [];
    assert.equal(await check.verdict(), undefined, "not listening yet: keep waiting");
    state.t = 500;
    state.sockets = [on(3000)];
    assert.equal(await check.verdict(), undefined, "just opened: within the grace");
    state.t = 2400;
    assert.equal(await check.verdict(), undefined, "1.9 s after it appeared");
    state.t = 2600;
    assert.equal(
      await check.verdict(),
      `listens on port 3000, not on $PORT (${PORT}): make it listen on the port in the PORT environment variable`,
    );
    assert.deepEqual(new Set(state.roots), new Set([1234]));
  });

  it("names every port it listens on", async () => {
    const { state, check } = fixture();
    state.sockets = [on(3000), on(9229, "127.0.0.1"), on(8000), on(3000, "::")];
    await check.verdict();
    state.t = 5000;
    assert.match(
      (await check.verdict()) ?? "",
      /^listens on ports 3000, 8000 and 9229, not on \$PORT \(41237\)/,
    );
  });

  it("a change of what it listens on starts the grace again", async () => {
    const { state, check } = fixture();
    state.sockets = [on(3000)];
    await check.verdict();
    state.t = 1900;
    state.sockets = [on(3000), on(3001)];
    assert.equal(await check.verdict(), undefined);
    state.t = 3000;
    assert.equal(await check.verdict(), undefined, "1.1 s after the change");
    state.t = 3900;
    assert.match((await check.verdict()) ?? "", /ports 3000 and 3001/);
  });

  it("an app that listens on $PORT, even beside other ports, is never failed by it", async () => {
    const { state, check } = fixture();
    state.sockets = [on(3000), on(PORT, "::")];
    await check.verdict();
    state.t = 60_000;
    assert.equal(await check.verdict(), undefined);
    assert.equal(await check.timedOut(60_000), undefined, "the health check's own reason applies");
  });

  it("/proc is read at most every 200 ms", async () => {
    const { state, check } = fixture();
    await check.verdict();
    state.t = 150;
    await check.verdict();
    assert.equal(state.reads, 1);
    state.t = 200;
    await check.verdict();
    assert.equal(state.reads, 2);
  });

  it("$PORT only on an address the probe does not reach: loopback probe", async () => {
    const { state, check } = fixture("loopback");
    state.sockets = [on(PORT, "::1")];
    await check.verdict();
    state.t = 2000;
    assert.equal(
      await check.verdict(),
      `listens on $PORT (${PORT}) only on ::1, where Slipway does not connect: make it listen on 127.0.0.1 or on all interfaces (0.0.0.0)`,
    );
  });

  it("$PORT only on a container's loopback: bridge probe", async () => {
    const { state, check } = fixture("bridge");
    state.sockets = [on(PORT, "127.0.0.1")];
    await check.verdict();
    state.t = 2000;
    assert.match(
      (await check.verdict()) ?? "",
      /only on 127\.0\.0\.1, which is not reachable from outside its container/,
    );
  });

  it("which addresses each probe reaches", () => {
    for (const a of ["0.0.0.0", "::", "127.0.0.1", "::ffff:127.0.0.1"])
      assert.ok(reachable(a, "loopback"), a);
    for (const a of ["::1", "127.0.0.2", "10.0.0.5", "::ffff:10.0.0.5"])
      assert.ok(!reachable(a, "loopback"), a);
    for (const a of ["0.0.0.0", "::", "10.88.0.5", "fe80::1"]) assert.ok(reachable(a, "bridge"), a);
    for (const a of ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"])
      assert.ok(!reachable(a, "bridge"), a);
  });

  it("at the timeout: no listening socket at all says so with the timeout; a wrong port says which", async () => {
    const silent = fixture();
    await silent.check.verdict();
    assert.equal(await silent.check.timedOut(30_000), `did not listen on $PORT (${PORT}) within 30 s`);
    assert.equal(await silent.check.timedOut(1500), `did not listen on $PORT (${PORT}) within 1.5 s`);

    const wrong = fixture();
    wrong.state.sockets = [on(3000)];
    assert.match((await wrong.check.timedOut(30_000)) ?? "", /^listens on port 3000, not on \$PORT/);
  });

  it("where the sockets cannot be read it says nothing, and never fails a start", async () => {
    const { state, check } = fixture();
    state.sockets = undefined;
    for (const t of [0, 5000, 60_000]) {
      state.t = t;
      assert.equal(await check.verdict(), undefined);
    }
    assert.equal(await check.timedOut(60_000), undefined);
  });

  it("a process not known yet (a container being created) is not read", async () => {
    const { state, check } = fixture("bridge", () => undefined);
    state.sockets = [on(3000)];
    state.t = 10_000;
    assert.equal(await check.verdict(), undefined);
    assert.equal(await check.timedOut(10_000), undefined);
    assert.equal(state.reads, 0);
  });

  it("a reading that fails after good ones keeps what was known", async () => {
    const { state, check } = fixture();
    state.sockets = [on(3000)];
    await check.verdict();
    state.sockets = undefined;
    state.t = 2000;
    assert.match((await check.verdict()) ?? "", /port 3000/);
  });

  it("seconds", () => {
    assert.equal(seconds(30_000), "30 s");
    assert.equal(seconds(1000), "1 s");
    assert.equal(seconds(250), "0.25 s");
  });
});
