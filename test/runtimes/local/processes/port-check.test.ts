import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ListeningSocket } from "../../../../src/runtimes/local/processes/listening-ports.ts";
import {
  PortCheck,
  type ProbeOrigin,
  reachable,
  seconds,
} from "../../../../src/runtimes/local/processes/port-check.ts";

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
  /** The clock at `t`: a read due then starts and finishes, and the verdict after it is answered. */
  const at = async (t: number) => {
    state.t = t;
    check.verdict();
    await new Promise((r) => setImmediate(r));
    return check.verdict();
  };
  return { state, check, at };
}

const on = (port: number, address = "0.0.0.0"): ListeningSocket => ({ address, port });

describe("port check", () => {
  it("an app on another port fails once the grace has passed, naming that port and $PORT", async () => {
    const { state, at } = fixture();
    state.sockets = [];
    assert.equal(await at(200), undefined, "not listening yet: keep waiting");
    state.sockets = [on(3000)];
    assert.equal(await at(500), undefined, "just opened: within the grace");
    assert.equal(await at(2400), undefined, "1.9 s after it appeared");
    assert.equal(
      await at(2600),
      `listens on port 3000, not on $PORT (${PORT}): make it listen on the port in the PORT environment variable`,
    );
    assert.deepEqual(new Set(state.roots), new Set([1234]));
  });

  it("names every port it listens on", async () => {
    const { state, at } = fixture();
    state.sockets = [on(3000), on(9229, "127.0.0.1"), on(8000), on(3000, "::")];
    await at(200);
    assert.match((await at(5000)) ?? "", /^listens on ports 3000, 8000 and 9229, not on \$PORT \(41237\)/);
  });

  it("a change of what it listens on starts the grace again", async () => {
    const { state, at } = fixture();
    state.sockets = [on(3000)];
    await at(200);
    state.sockets = [on(3000), on(3001)];
    assert.equal(await at(2100), undefined);
    assert.equal(await at(3200), undefined, "1.1 s after the change");
    assert.match((await at(4100)) ?? "", /ports 3000 and 3001/);
  });

  it("an app that listens on $PORT, even beside other ports, is never failed by it", async () => {
    const { state, check, at } = fixture();
    state.sockets = [on(3000), on(PORT, "::")];
    await at(200);
    assert.equal(await at(60_000), undefined);
    assert.equal(await check.timedOut(60_000), undefined, "the health check's own reason applies");
  });

  it("/proc is read 200 ms after the start at the earliest, then at most every 200 ms, one read at a time", async () => {
    const { state, at } = fixture();
    await at(150);
    assert.equal(state.reads, 0, "an app that answers within 200 ms costs no read");
    await at(200);
    await at(350);
    assert.equal(state.reads, 1);
    await at(400);
    assert.equal(state.reads, 2);
    // A slow read is not started again while it runs.
    let finish: () => void = () => {};
    const slow = new PortCheck({
      port: PORT,
      origin: "loopback",
      root: async () => 1,
      now: () => state.t,
      sample: () => {
        state.reads++;
        return new Promise((resolve) => {
          finish = () => resolve([]);
        });
      },
    });
    state.reads = 0;
    for (const t of [1000, 1300, 1600]) {
      state.t = t;
      slow.verdict();
    }
    const flush = () => new Promise((r) => setImmediate(r));
    await flush();
    assert.equal(state.reads, 1);
    finish();
    await flush();
    state.t = 1900;
    slow.verdict();
    await flush();
    assert.equal(state.reads, 2, "the next read once the slow one is done");
  });

  it("$PORT only on an address the probe does not reach: loopback probe", async () => {
    const { state, at } = fixture("loopback");
    state.sockets = [on(PORT, "::1")];
    await at(200);
    assert.equal(
      await at(2200),
      `listens on $PORT (${PORT}) only on ::1, where Slipway does not connect: make it listen on 127.0.0.1 or on all interfaces (0.0.0.0)`,
    );
  });

  it("$PORT only on a container's loopback: bridge probe", async () => {
    const { state, at } = fixture("bridge");
    state.sockets = [on(PORT, "127.0.0.1")];
    await at(200);
    assert.match(
      (await at(2200)) ?? "",
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
    assert.equal(await silent.check.timedOut(30_000), `did not listen on $PORT (${PORT}) within 30 s`);
    assert.equal(await silent.check.timedOut(1500), `did not listen on $PORT (${PORT}) within 1.5 s`);

    const wrong = fixture();
    wrong.state.sockets = [on(3000)];
    assert.match((await wrong.check.timedOut(30_000)) ?? "", /^listens on port 3000, not on \$PORT/);
  });

  it("where the sockets cannot be read it says nothing, and never fails a start", async () => {
    const { state, check, at } = fixture();
    state.sockets = undefined;
    for (const t of [200, 5000, 60_000]) assert.equal(await at(t), undefined);
    assert.ok(state.reads >= 3);
    assert.equal(await check.timedOut(60_000), undefined);
  });

  it("a process not known yet (a container being created) is not read", async () => {
    const { state, check, at } = fixture("bridge", () => undefined);
    state.sockets = [on(3000)];
    assert.equal(await at(10_000), undefined);
    assert.equal(await check.timedOut(10_000), undefined);
    assert.equal(state.reads, 0);
  });

  it("a reading that fails after good ones keeps what was known", async () => {
    const { state, at } = fixture();
    state.sockets = [on(3000)];
    await at(200);
    state.sockets = undefined;
    assert.match((await at(2200)) ?? "", /port 3000/);
  });

  it("seconds", () => {
    assert.equal(seconds(30_000), "30 s");
    assert.equal(seconds(1000), "1 s");
    assert.equal(seconds(250), "0.25 s");
  });
});
